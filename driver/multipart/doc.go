// Package multipart is for the author of a driver whose service stages a
// streamed write in parts and then commits them (S3's multipart upload,
// Azure's blocks, a GCS resumable upload).
//
// Such a driver's PutStream begins with driver.BeginPut and hands the rest
// to [Stream], giving it the service's requests as [UploadSteps]: Start,
// StagePart, Commit, Abort and Kind. Stream reads the body in parts
// ([ReadPart]: only the reader's own io.EOF ends it), stages a few at once,
// asks the write's MayStart before each request, commits under the write's
// condition, and on any failure aborts what was staged and returns an
// error whose cause is an [UploadError] saying what became of it. Steps
// whose service stores a one-part body more cheaply in one request
// implement [SinglePutter]; steps whose client library sends a part after
// StagePart returns implement [Drainer].
//
// A Bucket whose service can list the uploads it staged and never
// committed implements [PendingLister], so that drivertest can prove a
// failed write leaves nothing behind and an operator can see what a prefix
// has pending.
//
// A driver whose service cannot stage parts needs none of this: its
// PutStream is driver.PutWhole.
package multipart
