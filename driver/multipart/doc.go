// Package multipart is for the author of a driver whose service stages a
// streamed write in parts and then commits them (S3's multipart upload,
// Azure's blocks, a GCS resumable upload).
//
// Such a driver's PutStream begins with driver.BeginPut and hands the
// service's requests, as [UploadSteps], to [Stream], which reads the body
// in parts, stages a few at once, commits under the write's condition, and
// on any failure aborts what was staged and returns an [UploadError]
// saying what became of it. A Bucket whose service can list its staged,
// uncommitted uploads implements [PendingLister].
//
// A driver whose service cannot stage parts needs none of this: its
// PutStream is driver.PutWhole.
package multipart
