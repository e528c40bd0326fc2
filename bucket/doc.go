// Package bucket is the object-store bucket a backup writes and a restore
// reads: one prefix of one bucket, on any store a driver is registered for.
//
//	b, err := bucket.Open(ctx, "s3://backups/db1?region=eu-west-1")
//	...
//	defer b.Close()
//	rc, attrs, err := b.Get(ctx, "manifest") // the key "db1/manifest"
//
// Keys are relative to the prefix the Bucket was opened on. Every write
// names what it expects ([PutOptions].If): [IfAbsent] to create, [IfMatch]
// to replace the version that was read, so that two writers never silently
// overwrite each other; a condition that does not hold is [ErrPrecondition].
// A streamed write ([Bucket.Write]) is whole or absent: a failure leaves no
// object and nothing staged.
//
// The lease package gives a writer the same Bucket, fenced: it refuses
// writes once the lease is lost. This package is for everyone who reads, or
// who writes without a lease. Drivers, and how to write one, are in package
// driver.
package bucket
