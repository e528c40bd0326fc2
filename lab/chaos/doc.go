// Package chaos is a black-box, Jepsen-style test of the lease on real
// servers: real worker processes (cmd/chaosworker) contend for a few
// prefixes through the real drivers against MinIO, fake-gcs-server, Azurite
// or a local directory; a nemesis pauses, kills, restarts and duplicates
// them and cuts, delays and resets their connections through one TCP proxy
// per worker on 127.0.0.1; and a checker judges the run from nothing but a
// listing of the bucket and the workers' own logs.
//
// Nothing is modelled: the store, the SDKs, the network stack and the
// processes are real. The schedule of nemesis actions comes from a seed, so
// a seed names the same schedule again; the interleaving the real processes
// and servers produce is not replayable, which is why every violation is
// printed with the log lines around it. docs/chaos.md says what the nemesis
// does, what the checker proves and how to replay a seed.
package chaos
