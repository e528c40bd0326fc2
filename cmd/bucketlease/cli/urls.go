package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// scheme describes one URL scheme for help and error messages.
type scheme struct {
	name    string
	example string
	creds   string // where the driver reads its credentials; "" for none
}

// knownSchemes are the schemes this binary documents. The drivers that are
// linked in register themselves (drivers.go); Schemes lists those.
var knownSchemes = []scheme{
	{"file", "file:///var/backups/db1 (a local directory; the lease is /var/backups/db1/LEASE)", ""},
	{"mem", "mem://NAME/prefix (in this process only; for the demo and tests)", ""},
	{"s3", "s3://BUCKET/prefix?region=eu-west-1[&endpoint=https://host&path_style=true]",
		"the AWS SDK chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_PROFILE with ~/.aws/credentials, SSO, web identity or an instance role; AWS_REGION if the URL has no region"},
	{"r2", "r2://ACCOUNT_ID/BUCKET/prefix",
		"an R2 API token's key pair as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"},
	{"minio", "minio://HOST:PORT/BUCKET/prefix[?tls=false]",
		"MINIO_ROOT_USER and MINIO_ROOT_PASSWORD, or MINIO_ACCESS_KEY and MINIO_SECRET_KEY, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
	{"gs", "gs://BUCKET/prefix",
		"Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS (a service-account key file), `gcloud auth application-default login`, or workload identity"},
	{"azblob", "azblob://CONTAINER/prefix?account=ACCOUNT (or AZURE_STORAGE_ACCOUNT; ?endpoint=URL for Azurite or a private endpoint)",
		"AZURE_STORAGE_CONNECTION_STRING, else the default Azure credential chain (AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET; workload or managed identity; az login)"},
}

func lookupScheme(name string) (scheme, bool) {
	i := slices.IndexFunc(knownSchemes, func(s scheme) bool { return s.name == name })
	if i < 0 {
		return scheme{}, false
	}
	return knownSchemes[i], true
}

// urlHelp lists the schemes linked into this binary, with their
// credentials.
func urlHelp() string {
	var sb strings.Builder
	sb.WriteString("URLs (credentials never go in the URL; each driver reads its own):\n")
	for _, name := range location.Schemes() {
		s, ok := lookupScheme(name)
		if !ok {
			fmt.Fprintf(&sb, "  %s://…\n", name)
			continue
		}
		fmt.Fprintf(&sb, "  %s\n", s.example)
		if s.creds != "" {
			fmt.Fprintf(&sb, "      credentials: %s\n", s.creds)
		}
	}
	fmt.Fprintf(&sb, "  Set %s=off to run best-effort on a service that ignores conditional writes.\n", lease.EnvConditional)
	return sb.String()
}

// explain adds to err what the user can do about it: for a credentials
// problem (an error wrapping driver.ErrPermission, which every driver maps
// its service's 401, 403 and authentication errors to), the variables the
// driver of loc's scheme reads.
func explain(loc *location.Location, err error) error {
	if err == nil {
		return nil
	}
	s, ok := lookupScheme(loc.Scheme)
	if !ok || s.creds == "" {
		return err
	}
	if !errors.Is(err, driver.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w\nhint: check the credentials; the %s driver reads %s", err, s.name, s.creds)
}

// openLocation opens the bucket at loc (its prefix is loc.Prefix), and
// says what to do about missing credentials.
func openLocation(ctx context.Context, loc *location.Location) (driver.Bucket, error) {
	b, err := loc.Open(ctx)
	return b, explain(loc, err)
}

// openUnder opens the bucket at loc for a command that writes under its
// prefix (hold, put, probe): after fileLeaseNotObject has refused a
// file:// prefix whose LEASE is a directory, as openLocation does.
func openUnder(ctx context.Context, loc *location.Location) (driver.Bucket, error) {
	if err := fileLeaseNotObject(loc); err != nil {
		return nil, err
	}
	return openLocation(ctx, loc)
}

// displayURL returns rawURL as it may be printed: as typed when it holds
// nothing location.Redact would hide, else redacted. A URL the user typed is
// printed as its Location's String; this is for one built from it (list's
// lease URLs).
func displayURL(rawURL string) string {
	red := location.Redact(rawURL)
	a, errA := url.QueryUnescape(red)
	b, errB := url.QueryUnescape(rawURL)
	if errA == nil && errB == nil && a == b {
		return rawURL
	}
	return red
}

// refuseInProcess refuses a mem:// URL for a command whose point is other
// processes: a mem:// bucket lives inside this one process, so no other
// hold, show or break can see it, and a lease there excludes nobody, while
// it would still report "exclusion conditional".
func refuseInProcess(cmd string, loc *location.Location) error {
	if loc.Scheme != "mem" {
		return nil
	}
	return exitcode.Usagef("%s %s: mem:// is a bucket inside this one process; no other process (another hold, show or break) can see it, so a lease there excludes nobody. Use file:///some/dir for a lease on this machine, or a shared bucket; \"bucketlease demo\" shows the lease in memory",
		cmd, loc)
}
