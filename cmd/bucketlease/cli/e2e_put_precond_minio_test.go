//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/stripproxy"
)

// TestPutFailsClosedThroughProxy: put URL on a service that ignores write
// preconditions (MinIO behind the precondition-stripping proxy) exits 5,
// as hold does, and writes nothing: neither the lease nor the object.
func TestPutFailsClosedThroughProxy(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	p, err := stripproxy.Start(stripproxy.Config{Upstream: srv.URL(), Region: miniotest.Region,
		Credentials: aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	env := minioEnv(t, srv)
	u := s3URL(p.URL(), bucket, "db1")
	body := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(body, []byte("dump"), 0o600); err != nil {
		t.Fatal(err)
	}
	// TTL 6s: 2s per request, as for hold through the proxy.
	out, errOut, code := runCLI(t, env, "put", u, "dumps/a", body, "--ttl", "6s")
	noSecret(t, srv, out, errOut)
	if code != exitcode.ProbeFailed || !strings.Contains(errOut, "ignores write preconditions") {
		t.Errorf("put through the proxy: exit %d, want %d\n%s\n%s", code, exitcode.ProbeFailed, out, errOut)
	}
	direct := s3URL(srv.URL(), bucket, "db1")
	if out, _, _ := runCLI(t, env, "show", direct); !strings.Contains(out, "free") {
		t.Errorf("a put refused before its first write left the prefix not free:\n%s", out)
	}
	if _, errOut, code := runCLI(t, env, "get", direct, "dumps/a", "-"); code != exitcode.Failure || !strings.Contains(errOut, "dumps/a") {
		t.Errorf("get after the refused put: exit %d, want %d (no such key):\n%s", code, exitcode.Failure, errOut)
	}
}
