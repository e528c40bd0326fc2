//go:build linux

package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/testsupport/stripproxy"
)

// Drivers are the drivers a chaos run covers, in order. "s3-stripped" is
// not among them: it is the s3 driver through a proxy that strips
// preconditions (internal/stripproxy), for a negative control.
var Drivers = []string{"s3", "r2", "minio", "gcs", "azure", "file"}

// The emulator variables scripts/emulators.sh exports.
const (
	VarMinIOEndpoint  = "BUCKETLEASE_TEST_MINIO_ENDPOINT"
	VarMinIOAccessKey = "BUCKETLEASE_TEST_MINIO_ACCESS_KEY"
	VarMinIOSecretKey = "BUCKETLEASE_TEST_MINIO_SECRET_KEY"
	VarGCSEndpoint    = "BUCKETLEASE_TEST_GCS_ENDPOINT"
	VarAzuriteConn    = "BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING"
	VarAzuriteURL     = "BUCKETLEASE_TEST_AZURITE_ENDPOINT"
)

// EmulatorVars returns the variables a driver's chaos run needs.
func EmulatorVars(name string) []string {
	switch name {
	case "s3", "r2", "minio", "s3-stripped":
		return []string{VarMinIOEndpoint, VarMinIOAccessKey, VarMinIOSecretKey}
	case "gcs":
		return []string{VarGCSEndpoint}
	case "azure":
		return []string{VarAzuriteConn, VarAzuriteURL}
	}
	return nil
}

// MissingVars returns those of a driver's variables that getenv finds empty.
func MissingVars(name string, getenv func(string) string) []string {
	var missing []string
	for _, v := range EmulatorVars(name) {
		if getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	return missing
}

// backend is one driver on its server, prepared for a run: a fresh bucket,
// the URLs and environment of its workers, and a direct (unproxied) view of
// the bucket for the nemesis and the checker.
type backend struct {
	name     string
	upstream string   // host:port the worker proxies forward to; "" for none
	prefixes []string // the driver prefix of each label
	directs  []driver.Bucket
	// workerURL returns the worker URL for label i through the proxy at addr.
	workerURL func(addr string, i int) string
	// workerEnv returns the worker's credentials for the proxy at addr.
	workerEnv func(addr string) []string
	// list returns the keys under label i.
	list func(ctx context.Context, i int) ([]listed, error)
	// pending returns the uploads staged and neither committed nor
	// aborted in the whole bucket, and abort removes one; both are nil
	// where the harness cannot list them (noPending says why).
	pending   func(ctx context.Context) ([]PendingUpload, error)
	abort     func(ctx context.Context, p PendingUpload) error
	noPending string
	cleanup   []func()
}

// PendingUpload is an upload left staged at the end of a run: an S3
// multipart upload neither completed nor aborted, or a temporary file of the
// file driver's streamed writes.
type PendingUpload struct {
	Label     string
	Key       string // the key it would have been committed under; "" if the store does not say
	Name      string // the key under the lease's prefix
	Upload    string // the service's name for it: an upload ID, a file
	Initiated time.Time
}

type listed struct {
	key      string
	modified time.Time
}

func (b *backend) close() {
	for i := len(b.cleanup) - 1; i >= 0; i-- {
		b.cleanup[i]()
	}
}

func randomName(prefix string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return prefix + hex.EncodeToString(r[:])
}

// awsIsolation keeps the developer's AWS files out of the workers.
func awsIsolation(dir string) []string {
	return []string{
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "aws-config-none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "aws-credentials-none"),
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// newBackend prepares driver name for a run with k leases, keeping its
// files under dir.
func newBackend(ctx context.Context, name string, k int, dir string, getenv func(string) string) (*backend, error) {
	if m := MissingVars(name, getenv); len(m) > 0 {
		return nil, fmt.Errorf("%s: %s unset", name, strings.Join(m, ", "))
	}
	b := &backend{name: name}
	for i := range k {
		b.prefixes = append(b.prefixes, "chaos/"+Label(i))
	}
	var err error
	switch name {
	case "s3", "r2", "minio", "s3-stripped":
		err = b.minio(ctx, name, dir, getenv)
	case "gcs":
		err = b.gcs(ctx, getenv(VarGCSEndpoint))
	case "azure":
		err = b.azure(ctx, getenv(VarAzuriteConn))
	case "file":
		err = b.file(dir, k)
	default:
		err = fmt.Errorf("no driver %q", name)
	}
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *backend) minio(ctx context.Context, name, dir string, getenv func(string) string) error {
	addr, ak, sk := getenv(VarMinIOEndpoint), getenv(VarMinIOAccessKey), getenv(VarMinIOSecretKey)
	client := s3sdk.New(s3sdk.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, ""),
	})
	bucket := randomName("chaos-")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(cctx, &s3sdk.CreateBucketInput{Bucket: &bucket}); err != nil {
		return fmt.Errorf("create bucket on MinIO: %w", err)
	}
	b.cleanup = append(b.cleanup, func() { removeS3Bucket(client, bucket) })
	b.upstream = addr
	if name == "s3-stripped" {
		sp, err := stripproxy.Start(stripproxy.Config{Upstream: "http://" + addr, Region: "us-east-1",
			Credentials: aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}})
		if err != nil {
			return err
		}
		b.cleanup = append(b.cleanup, func() { _ = sp.Close() })
		b.upstream = strings.TrimPrefix(sp.URL(), "http://")
	}
	direct := s3.New(client, bucket)
	for range b.prefixes {
		b.directs = append(b.directs, direct)
	}
	// The bucket is the run's own, so its pending uploads are the run's;
	// MinIO lists them all for the empty prefix (for a longer one, only a
	// key's own).
	b.pending = func(ctx context.Context) ([]PendingUpload, error) {
		var out []PendingUpload
		for p, err := range multipart.PendingLister(direct).ListPending(ctx, "") {
			if err != nil {
				return nil, err
			}
			out = append(out, b.pendingOf(p))
		}
		return out, nil
	}
	b.abort = func(ctx context.Context, p PendingUpload) error {
		_, err := client.AbortMultipartUpload(ctx, &s3sdk.AbortMultipartUploadInput{Bucket: &bucket, Key: &p.Key, UploadId: &p.Upload})
		return err
	}
	awsEnv := func(string) []string {
		return append(awsIsolation(dir), "AWS_ACCESS_KEY_ID="+ak, "AWS_SECRET_ACCESS_KEY="+sk)
	}
	switch name {
	case "s3", "s3-stripped":
		b.workerEnv = awsEnv
		b.workerURL = func(a string, i int) string {
			return "s3://" + bucket + "/" + b.prefixes[i] + "?region=us-east-1&path_style=true&endpoint=http://" + a
		}
	case "r2":
		b.workerEnv = awsEnv
		b.workerURL = func(a string, i int) string {
			return "r2://0123456789abcdef0123456789abcdef/" + bucket + "/" + b.prefixes[i] + "?endpoint=http://" + a
		}
	case "minio":
		b.workerEnv = func(string) []string { return []string{"MINIO_ACCESS_KEY=" + ak, "MINIO_SECRET_KEY=" + sk} }
		b.workerURL = func(a string, i int) string {
			return "minio://" + a + "/" + bucket + "/" + b.prefixes[i] + "?tls=false"
		}
	}
	b.list = func(ctx context.Context, i int) ([]listed, error) {
		var out []listed
		p := s3sdk.NewListObjectsV2Paginator(client, &s3sdk.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(b.prefixes[i] + "/")})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, o := range page.Contents {
				out = append(out, listed{key: aws.ToString(o.Key), modified: aws.ToTime(o.LastModified)})
			}
		}
		return out, nil
	}
	return nil
}

func removeS3Bucket(c *s3sdk.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := s3sdk.NewListObjectsV2Paginator(c, &s3sdk.ListObjectsV2Input{Bucket: &name})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return
		}
		for _, o := range page.Contents {
			_, _ = c.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: &name, Key: o.Key})
		}
	}
	_, _ = c.DeleteBucket(ctx, &s3sdk.DeleteBucketInput{Bucket: &name})
}

func (b *backend) gcs(ctx context.Context, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s is not a URL", VarGCSEndpoint)
	}
	client, err := storage.NewClient(ctx, option.WithEndpoint(endpoint+"/storage/v1/"), option.WithoutAuthentication(),
		storage.WithJSONReads())
	if err != nil {
		return err
	}
	b.cleanup = append(b.cleanup, func() { client.Close() })
	bucket := randomName("chaos-")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Bucket(bucket).Create(cctx, "chaos", nil); err != nil {
		return fmt.Errorf("create bucket on fake-gcs-server: %w", err)
	}
	b.upstream = u.Host
	b.noPending = "the gcs driver has no PendingLister (a resumable session cannot be listed), so uploads left pending were not counted"
	direct := gcs.New(client, bucket)
	for range b.prefixes {
		b.directs = append(b.directs, direct)
	}
	b.workerEnv = func(string) []string { return nil }
	b.workerURL = func(a string, i int) string { return "gs://" + bucket + "/" + b.prefixes[i] + "?endpoint=http://" + a }
	b.list = func(ctx context.Context, i int) ([]listed, error) {
		var out []listed
		it := client.Bucket(bucket).Objects(ctx, &storage.Query{Prefix: b.prefixes[i] + "/"})
		for range 100000 {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			out = append(out, listed{key: a.Name, modified: a.Updated})
		}
		return nil, errors.New("gcs: listing did not end")
	}
	b.cleanup = append(b.cleanup, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := range b.prefixes {
			objs, _ := b.list(ctx, i)
			for _, o := range objs {
				_ = client.Bucket(bucket).Object(o.key).Delete(ctx)
			}
		}
		_ = client.Bucket(bucket).Delete(ctx)
	})
	return nil
}

func (b *backend) azure(ctx context.Context, conn string) error {
	name := randomName("chaos-")
	c, err := container.NewClientFromConnectionString(conn, name, nil)
	if err != nil {
		return errors.New("the Azurite connection string does not parse")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.Create(cctx, nil); err != nil {
		return fmt.Errorf("create container on Azurite: %w", err)
	}
	b.cleanup = append(b.cleanup, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = c.Delete(ctx, nil)
	})
	endpoint := ""
	var rest []string
	for _, part := range strings.Split(conn, ";") {
		if v, ok := strings.CutPrefix(part, "BlobEndpoint="); ok {
			endpoint = v
			continue
		}
		if part != "" {
			rest = append(rest, part)
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return errors.New("the Azurite connection string names no BlobEndpoint")
	}
	b.upstream = u.Host
	b.noPending = "the azure driver has no PendingLister (uncommitted blocks are not listed here; Azure drops them after 7 days), so uploads left pending were not counted"
	direct := azure.New(c)
	for range b.prefixes {
		b.directs = append(b.directs, direct)
	}
	b.workerEnv = func(a string) []string {
		pu := *u
		pu.Host = a
		return []string{azure.EnvConnectionString + "=" + strings.Join(rest, ";") + ";BlobEndpoint=" + pu.String() + ";"}
	}
	b.workerURL = func(_ string, i int) string { return "azblob://" + name + "/" + b.prefixes[i] }
	b.list = func(ctx context.Context, i int) ([]listed, error) {
		var out []listed
		pfx := b.prefixes[i] + "/"
		pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &pfx})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, it := range page.Segment.BlobItems {
				l := listed{key: *it.Name}
				if it.Properties != nil && it.Properties.LastModified != nil {
					l.modified = *it.Properties.LastModified
				}
				out = append(out, l)
			}
		}
		return out, nil
	}
	return nil
}

func (b *backend) file(dir string, k int) error {
	root := filepath.Join(dir, "bucket")
	b.prefixes = make([]string, k)
	var dirs []string
	for i := range k {
		d := filepath.Join(root, Label(i))
		fb, err := file.Open(d)
		if err != nil {
			return err
		}
		b.directs = append(b.directs, fb)
		dirs = append(dirs, d)
	}
	b.workerEnv = func(string) []string { return nil }
	b.workerURL = func(_ string, i int) string { return "file://" + dirs[i] }
	// The file driver stages every write in DIR/.bucketlease/tmp; a file
	// left there is a write that never finished. Its key is not known.
	b.pending = func(context.Context) ([]PendingUpload, error) {
		var out []PendingUpload
		for i, d := range dirs {
			ents, err := os.ReadDir(filepath.Join(d, ".bucketlease", "tmp"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			for _, e := range ents {
				p := PendingUpload{Label: Label(i), Upload: filepath.Join(d, ".bucketlease", "tmp", e.Name())}
				if info, err := e.Info(); err == nil {
					p.Initiated = info.ModTime()
				}
				out = append(out, p)
			}
		}
		return out, nil
	}
	b.abort = func(_ context.Context, p PendingUpload) error { return os.Remove(p.Upload) }
	b.list = func(_ context.Context, i int) ([]listed, error) {
		var out []listed
		err := filepath.WalkDir(dirs[i], func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == ".bucketlease" {
					return filepath.SkipDir
				}
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dirs[i], p)
			out = append(out, listed{key: filepath.ToSlash(rel), modified: info.ModTime()})
			return nil
		})
		return out, err
	}
	return nil
}

// pendingOf names the label and lease-relative key of a pending upload.
func (b *backend) pendingOf(p multipart.Pending) PendingUpload {
	u := PendingUpload{Key: p.Key, Name: p.Key, Upload: p.Upload, Initiated: p.Initiated}
	for i, pfx := range b.prefixes {
		if pfx != "" && strings.HasPrefix(p.Key, pfx+"/") {
			u.Label, u.Name = Label(i), strings.TrimPrefix(p.Key, pfx+"/")
		}
	}
	return u
}

// osGetenv is os.Getenv, for callers that pass none.
var osGetenv = os.Getenv
