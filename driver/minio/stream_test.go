package minio_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	miniogo "github.com/minio/minio-go/v7"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// partTransport sees every UploadPart request (a PUT with partNumber in
// its query): it records the request's X-Amz-Content-Sha256 by part
// number and, for the part numbered corrupt, flips one byte of the body
// on the wire.
type partTransport struct {
	rt      http.RoundTripper
	corrupt string // part number to corrupt; "" for none

	mu     sync.Mutex
	hashes map[string]string
}

func (p *partTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := req.URL.Query().Get("partNumber")
	if req.Method == http.MethodPut && n != "" {
		p.mu.Lock()
		if p.hashes == nil {
			p.hashes = map[string]string{}
		}
		p.hashes[n] = req.Header.Get("X-Amz-Content-Sha256")
		p.mu.Unlock()
		if n == p.corrupt && req.Body != nil {
			req = req.Clone(req.Context())
			req.Body = &flipReader{r: req.Body, at: 100}
		}
	}
	return p.rt.RoundTrip(req)
}

// flipReader inverts the byte at offset at.
type flipReader struct {
	r   io.ReadCloser
	at  int64
	off int64
}

func (f *flipReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if i := f.at - f.off; i >= 0 && i < int64(n) {
		b[i] ^= 0xff
	}
	f.off += int64(n)
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }

// onlyReader hides everything but Read, so that the length is unknown.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

func streamBody(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{7})
	_, _ = r.Read(b)
	return b
}

// TestStreamPartsSignTheirHash: over plain HTTP each part is sent with its
// own SHA-256 as the signed payload hash (not minio-go's streaming
// signature, whose per-chunk garbage doubled the peak heap), and the body
// round-trips.
func TestStreamPartsSignTheirHash(t *testing.T) {
	srv := miniotest.Env(t)
	pt := &partTransport{rt: http.DefaultTransport.(*http.Transport).Clone()}
	b := minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, pt), srv.NewBucket(t))
	body := streamBody(2*driver.MinPartSize + 12345)
	opts := &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 2}
	put, err := b.PutStream(t.Context(), "k", onlyReader{bytes.NewReader(body)}, driver.PutOptions{If: driver.IfAbsent()}, opts)
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	if len(pt.hashes) != 3 {
		t.Fatalf("saw %d part requests (%v), want 3", len(pt.hashes), pt.hashes)
	}
	for i, want := range []string{"1", "2", "3"} {
		lo := i * driver.MinPartSize
		hi := min(lo+driver.MinPartSize, len(body))
		sum := sha256.Sum256(body[lo:hi])
		if got := pt.hashes[want]; got != hex.EncodeToString(sum[:]) {
			t.Errorf("part %s: X-Amz-Content-Sha256 = %q, want the part's SHA-256 %x", want, got, sum)
		}
	}
	rc, ga, err := b.Get(t.Context(), "k", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) || ga.Version != v {
		t.Errorf("Get: %d bytes (equal %v), version %s; want %d bytes, version %s", len(got), bytes.Equal(got, body), ga.Version, len(body), v)
	}
}

// TestStreamCorruptPartRefused: a part whose bytes change on the wire is
// refused by the server, since its hash is signed, and nothing is
// committed. Negative control: the same corruption of a part sent with
// UNSIGNED-PAYLOAD and no hash is accepted, so the test would see a
// driver that dropped the hash.
func TestStreamCorruptPartRefused(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	pt := &partTransport{rt: http.DefaultTransport.(*http.Transport).Clone(), corrupt: "2"}
	c := client(t, srv.Addr, srv.AccessKey, srv.SecretKey, pt)
	b := minio.New(c, bucket)
	body := streamBody(2*driver.MinPartSize + 1)
	opts := &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1}
	_, err := b.PutStream(t.Context(), "k", onlyReader{bytes.NewReader(body)}, driver.PutOptions{If: driver.IfAbsent()}, opts)
	if err == nil {
		t.Fatal("PutStream with part 2 corrupted on the wire succeeded")
	}
	var ue *multipart.UploadError
	if !errors.As(err, &ue) || !ue.Aborted {
		t.Errorf("error %v: want an *UploadError whose upload was aborted", err)
	}
	if !strings.Contains(err.Error(), "SHA256") && !strings.Contains(err.Error(), "sha256") {
		t.Errorf("error %q does not say the hash did not match", err)
	}
	if _, _, err := b.Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get after the refused write: %v, want ErrNotExist", err)
	}

	// Negative control.
	core := miniogo.Core{Client: c}
	id, err := core.NewMultipartUpload(t.Context(), bucket, "ctl", miniogo.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer core.AbortMultipartUpload(t.Context(), bucket, "ctl", id)
	part := body[:driver.MinPartSize]
	if _, err := core.PutObjectPart(t.Context(), bucket, "ctl", id, 2, bytes.NewReader(part), int64(len(part)),
		miniogo.PutObjectPartOptions{DisableContentSha256: true}); err != nil {
		t.Errorf("control: an unhashed corrupted part was refused (%v), so the test cannot tell a hash from none", err)
	}
}
