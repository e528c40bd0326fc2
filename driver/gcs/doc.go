// Package gcs is the Google Cloud Storage driver, built on
// cloud.google.com/go/storage. Importing it registers the scheme "gs":
//
//	gs://BUCKET/PREFIX
//	gs://BUCKET/PREFIX?endpoint=http://127.0.0.1:4443
//
// opens bucket BUCKET; the lease lives under PREFIX. The bucket must exist.
// The one parameter, endpoint, is the base URL of the JSON API, for an
// emulator such as fake-gcs-server or a private endpoint; any other is
// refused. Credentials come from Application Default Credentials, never
// from the URL; an http:// endpoint, or STORAGE_EMULATOR_HOST, is sent
// none. To configure the client some other way, build it yourself and pass
// it to [New].
//
// A Version is the object's generation in decimal: IfAbsent is sent as
// ifGenerationMatch=0 and IfMatch(v) as ifGenerationMatch=v, on uploads and
// on deletes, so the driver declares Exclusion Conditional and
// ConditionalDelete. Put sends every body in one request, never a
// resumable upload; PutStream writes a longer body as a resumable upload
// whose final request carries the condition.
//
// A bucket opened by URL owns its client and its HTTP transports (one for
// streamed writes and listing, one for the small requests, so that a
// renewal never queues behind a streamed upload's chunks): close it with
// bucket.Bucket.Close when done. A Bucket from New leaves its caller's client
// open.
//
// docs/drivers.md ("gs:// — Google Cloud Storage") has the details: how
// the service's errors map, why a Put is buffered, how retries are
// reported, what a failed streamed write leaves, and fake-gcs-server's
// quirks.
package gcs
