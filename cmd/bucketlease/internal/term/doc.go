// Package term writes text for a terminal: Safe escapes what the service
// hands back (keys, instance ids, its error messages), written by whoever
// can write to the bucket, so that no escape sequence or bidi control in
// it acts on the operator's terminal; ShellQuote quotes a word of a
// command line the tool suggests so that it pastes as itself; Wrap and
// OneLine lay out reports; IsTerminal tells a terminal.
package term
