// Package minioregress holds regression tests of the lease against the real
// MinIO server that scripts/test starts, through every S3-family driver
// (s3, r2 and minio): the places where the lease once trusted what a driver
// declared about a service that does otherwise. It has no code of its own.
package minioregress
