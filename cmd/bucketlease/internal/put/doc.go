// Package put is the pipeline behind "bucketlease put": it reads the body
// from a file, stdin or a producer run under the watchdog (Input), checks
// it on its way (Body: a producer that failed, or an input that does not
// match its size or SHA-256, fails the read before the upload may commit),
// and streams it through a lease's fenced bucket (Fenced, Settle).
//
// Inside "bucketlease hold URL -- COMMAND", put runs in another process
// than the lease: hold serves a Unix socket (Serve, named in SocketEnv)
// and put sends it the upload (Dial, Client.Upload) over a small protocol
// whose end chunk tells a complete body from a client that died mid-body,
// so that a cut-off upload is aborted, never stored truncated.
//
// It checks put's own flags (Flags, Size, ParseSHA256) and reports its
// outcomes as errors (Error with its class, LateError, ErrMismatch,
// ErrInterrupted, supervise's ErrProducerFailed and StartError), which
// Exit maps to the command's exit codes.
package put
