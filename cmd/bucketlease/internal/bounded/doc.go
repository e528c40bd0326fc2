// Package bounded bounds every request to a bucket (New): a service that
// accepts a connection and never answers ends in an error that names the
// URL and the request, instead of a hang.
//
// It exists because the drivers wait as long as their caller's context
// does, and the commands' contexts last as long as the operator waits:
// hold bounds each request by a third of the TTL, show, break, list, get
// and probe by --timeout.
package bounded
