// Package admin holds what an operator's tool needs beside package lease:
// RemovePending, which aborts the uploads that dead or fenced writers left
// under a prefix, and never one that a live holder may still commit.
package admin
