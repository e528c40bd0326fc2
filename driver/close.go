package driver

import "io"

// Close releases what b holds, if its driver gives it a Close method
// (io.Closer), and returns that method's error; a Bucket without one holds
// nothing that needs releasing, and Close returns nil.
//
// Closing is an optional ability, found at run time by a type assertion: a
// driver whose Bucket holds
// something that outlives its operations (an SDK client with its own
// connection pool, as the gs driver's Open creates) implements io.Closer.
// gocloud.dev/blob's Bucket.Close is the model. A Bucket's Close releases
// only what the driver itself created: a Bucket built around a client its
// caller passed in (gcs.New, say) leaves that client to the caller.
//
// Call Close on every Bucket that Open returned, once no operation of it is
// in flight, and do not use the Bucket afterwards. A program that opens
// buckets repeatedly (one per backup run, say) otherwise keeps each one's
// client, with its idle connections and their goroutines.
func Close(b Bucket) error {
	if c, ok := b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
