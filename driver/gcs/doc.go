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
// A Version is the object's generation in decimal, sent as
// ifGenerationMatch (0 for IfAbsent) on uploads and deletes, so the driver
// declares Conditional exclusion and ConditionalDelete. A bucket opened by
// URL owns its client and transports (one for the small requests, so a
// renewal never queues behind a streamed upload): close it when done.
//
// docs/drivers.md ("gs:// — Google Cloud Storage") has the details.
package gcs
