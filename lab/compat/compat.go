// Package compat measures the lease on real object stores: for each server
// that scripts/compat installed and started on loopback, it runs the
// conformance probe of package drivertest (what `bucketlease probe` prints)
// through every driver that can talk to the server, then the lease
// scenarios that decide whether a second writer is kept out there (32
// contenders racing, a takeover, a fenced holder's release after a
// takeover), and writes the results as docs/compatibility.md.
//
// The results are also kept as JSON (testdata/results.json); the package's
// test renders that JSON again and compares it with the committed table,
// and compares the check names with drivertest's, so that the table can
// neither be edited by hand nor drift from the suite.
package compat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"

	// Every driver a server may be reached through.
	_ "github.com/mushroomdb/bucketlease/driver/azure"
	_ "github.com/mushroomdb/bucketlease/driver/gcs"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
)

// Kinds of server: which API it speaks, and so which drivers can reach it.
const (
	KindS3    = "s3"    // the S3 API: drivers s3, r2 and minio
	KindAzure = "azure" // Azure Blob: driver azblob
	KindGCS   = "gcs"   // the GCS JSON API: driver gs
)

// Server is one service under test, as scripts/compat describes it (one
// JSON object per line of its servers file). Credentials are local,
// generated for the run, and never written to the results.
type Server struct {
	ID      string `json:"id"`      // short name, such as "versitygw"
	Name    string `json:"name"`    // display name, such as "Versity S3 Gateway"
	Version string `json:"version"` // the pinned version that ran
	Kind    string `json:"kind"`    // KindS3, KindAzure or KindGCS
	// Setup says how the server was installed and started, for the table.
	Setup string `json:"setup"`
	// Error, if set, says why the server could not be built or started;
	// the table shows it and nothing else is run.
	Error string `json:"error,omitempty"`

	Endpoint         string `json:"endpoint,omitempty"` // base URL, http://127.0.0.1:PORT[/account]
	Region           string `json:"region,omitempty"`
	AccessKey        string `json:"access_key,omitempty"`
	SecretKey        string `json:"secret_key,omitempty"`
	ConnectionString string `json:"connection_string,omitempty"` // Azure
}

// Drivers returns the URL schemes of the drivers that can reach a server of
// the given kind.
func Drivers(kind string) []string {
	switch kind {
	case KindS3:
		return []string{"s3", "r2", "minio"}
	case KindAzure:
		return []string{"azblob"}
	case KindGCS:
		return []string{"gs"}
	}
	return nil
}

// URL returns the URL through which driver reaches bucket/prefix on s.
func (s Server) URL(scheme, bucket, prefix string) (string, error) {
	e, err := url.Parse(s.Endpoint)
	if err != nil || e.Host == "" {
		return "", fmt.Errorf("server %s: bad endpoint %q", s.ID, s.Endpoint)
	}
	region := s.Region
	if region == "" {
		region = "us-east-1"
	}
	switch scheme {
	case "s3":
		q := url.Values{"region": {region}, "endpoint": {s.Endpoint}, "path_style": {"true"}}
		return "s3://" + bucket + "/" + prefix + "?" + q.Encode(), nil
	case "r2":
		// The account id only names R2's default endpoint, which the
		// endpoint parameter replaces.
		return "r2://compat/" + bucket + "/" + prefix + "?" + url.Values{"endpoint": {s.Endpoint}}.Encode(), nil
	case "minio":
		return "minio://" + e.Host + "/" + bucket + "/" + prefix + "?tls=false&region=" + url.QueryEscape(region), nil
	case "azblob":
		return "azblob://" + bucket + "/" + prefix, nil
	case "gs":
		return "gs://" + bucket + "/" + prefix + "?" + url.Values{"endpoint": {s.Endpoint}}.Encode(), nil
	}
	return "", fmt.Errorf("no driver %q", scheme)
}

// credentialVars are every variable a driver reads credentials or
// configuration from; setEnv clears them all before setting a server's.
var credentialVars = []string{
	"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
	"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY",
	"AZURE_STORAGE_CONNECTION_STRING", "STORAGE_EMULATOR_HOST", lease.EnvConditional,
}

// setEnv gives the drivers, which read credentials from the environment,
// the server's and nothing else (not the developer's AWS files either).
func (s Server) setEnv(scratch string) error {
	for _, v := range credentialVars {
		if err := os.Unsetenv(v); err != nil {
			return err
		}
	}
	set := map[string]string{
		"AWS_CONFIG_FILE":             scratch + "/aws-config",
		"AWS_SHARED_CREDENTIALS_FILE": scratch + "/aws-credentials",
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
	switch s.Kind {
	case KindS3:
		set["AWS_ACCESS_KEY_ID"] = s.AccessKey
		set["AWS_SECRET_ACCESS_KEY"] = s.SecretKey
		set["MINIO_ACCESS_KEY"] = s.AccessKey
		set["MINIO_SECRET_KEY"] = s.SecretKey
	case KindAzure:
		set["AZURE_STORAGE_CONNECTION_STRING"] = s.ConnectionString
	}
	for k, v := range set {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// Options tune a measurement.
type Options struct {
	// CheckTimeout bounds each probe check. Default two minutes.
	CheckTimeout time.Duration
	// Racers is how many contenders race in the race scenario. Default 32.
	Racers int
	// Rounds is how many times the race is run. Default 3.
	Rounds int
	// Log, if set, receives progress lines.
	Log func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 2 * time.Minute
	}
	if o.Racers <= 0 {
		o.Racers = 32
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// Measure runs everything on one server: a bucket of its own, then for
// each driver that can reach it the probe, the lease's behaviour and the
// lease scenarios. It changes the process environment (the drivers read
// credentials from it), so servers must be measured one at a time.
func Measure(ctx context.Context, s Server, opts Options) Service {
	opts.defaults()
	svc := Service{ID: s.ID, Name: s.Name, Version: s.Version, Kind: s.Kind, Setup: s.Setup, Error: s.Error}
	if s.Error != "" {
		return svc
	}
	scratch, err := os.MkdirTemp("", "bucketlease-compat-env-")
	if err != nil {
		svc.Error = err.Error()
		return svc
	}
	defer os.RemoveAll(scratch)
	if err := s.setEnv(scratch); err != nil {
		svc.Error = "setting the environment: " + err.Error()
		return svc
	}
	bucket := "bucketlease-compat-" + randomHex(4)
	if err := createBucket(ctx, s, bucket); err != nil {
		svc.Error = "creating a bucket: " + oneLine(err.Error())
		return svc
	}
	svc.RawDelete = rawConditionalDelete(ctx, s, bucket)
	svc.RawPut = rawIfMatchPut(ctx, s, bucket)
	if svc.RawDelete != "" {
		opts.Log("%s: If-Match on DELETE: %s; If-Match on PUT: %s", s.ID, svc.RawDelete, svc.RawPut)
	}
	for _, scheme := range Drivers(s.Kind) {
		opts.Log("%s: driver %s", s.ID, scheme)
		svc.Runs = append(svc.Runs, measureDriver(ctx, s, scheme, bucket, opts))
	}
	return svc
}

func measureDriver(ctx context.Context, s Server, scheme, bucket string, opts Options) Run {
	run := Run{Driver: scheme}
	rawURL, err := s.URL(scheme, bucket, "compat-"+scheme)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	b, prefix, err := location.Open(ctx, rawURL)
	if err != nil {
		run.Error = "open: " + oneLine(err.Error())
		return run
	}
	start := time.Now()
	rep := drivertest.Check(ctx, b, drivertest.Options{Prefix: prefix + "/probe", Timeout: opts.CheckTimeout})
	opts.Log("%s/%s: probe in %s, ok=%v", s.ID, scheme, time.Since(start).Round(time.Second), rep.OK())
	run.Declared = capsOf(rep.Declared)
	run.Observed = capsOf(rep.Observed)
	run.ProbeOK = rep.OK()
	for _, r := range rep.Results {
		c := CheckResult{Name: r.Name, Result: r.Status()}
		if !r.Passed && !r.Skipped {
			c.Got = evidence(r.Got)
		}
		run.Checks = append(run.Checks, c)
	}
	run.Lease = leaseBehaviour(ctx, b, prefix+"/behaviour")
	opts.Log("%s/%s: lease %s", s.ID, scheme, run.Lease)
	run.Scenarios = scenarios(ctx, b, prefix, opts)
	for _, sc := range run.Scenarios {
		opts.Log("%s/%s: %s passed=%v %s", s.ID, scheme, sc.Name, sc.Passed, sc.Detail)
	}
	run.Verdict = verdict(run)
	return run
}

func capsOf(c driver.Capabilities) Caps {
	return Caps{Exclusion: c.Exclusion.String(), ConditionalDelete: c.ConditionalDelete}
}

// What the lease does on a service, as leaseBehaviour finds it.
const (
	LeaseFailsClosed    = "fails closed: ErrPreconditionsIgnored"
	LeaseReleaseDelete  = "conditional exclusion; releases by If-Match DELETE"
	LeaseReleaseRecord  = "conditional exclusion; releases by overwriting with a released record"
	LeaseAcquireFailed  = "acquire failed"
	leaseBestEffortText = "best-effort exclusion"
)

// leaseBehaviour takes a lease on a fresh prefix and releases it, and says
// what happened: refused with ErrPreconditionsIgnored, or acquired with
// which exclusion, and whether the release deleted the object or left a
// released record.
func leaseBehaviour(ctx context.Context, b driver.Bucket, prefix string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	defer b.Delete(context.WithoutCancel(ctx), admin.Key(prefix), driver.Condition{})
	l, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("behaviour", nil))
	switch {
	case errors.Is(err, lease.ErrPreconditionsIgnored):
		return LeaseFailsClosed
	case err != nil:
		return LeaseAcquireFailed + ": " + evidence(err.Error())
	}
	exclusion := l.Exclusion()
	if err := l.Release(ctx); err != nil {
		return fmt.Sprintf("%s exclusion; release failed: %s", exclusion, oneLine(err.Error()))
	}
	data, _, err := objects.ReadAll(ctx, b, admin.Key(prefix), admin.MaxRecordSize, driver.GetOptions{})
	if exclusion != driver.Conditional {
		return leaseBestEffortText
	}
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return LeaseReleaseDelete
	case err != nil:
		return "conditional exclusion; reading the lease after release: " + oneLine(err.Error())
	}
	rec, err := admin.DecodeRecord(data)
	if err == nil && rec.TTLSeconds == 0 {
		return LeaseReleaseRecord
	}
	return fmt.Sprintf("conditional exclusion; release left %q", clip(data))
}

// verdict sums a run up for the summary table.
func verdict(r Run) string {
	if r.Error != "" {
		return "not measured"
	}
	if r.Lease == LeaseFailsClosed {
		return "fails closed (the lease refuses to run)"
	}
	if strings.HasPrefix(r.Lease, LeaseAcquireFailed) {
		return "unusable: requests fail, the lease is never acquired"
	}
	var failed, brokenIn []string
	for _, sc := range r.Scenarios {
		switch {
		case sc.Broken:
			brokenIn = append(brokenIn, sc.Name)
		case !sc.Passed && !sc.FailedClosed:
			failed = append(failed, sc.Name)
		}
	}
	if len(brokenIn) > 0 {
		return "**not safe** (" + strings.Join(brokenIn, ", ") + ": exclusion broken)"
	}
	if len(failed) > 0 {
		return "**not safe, unusable** (" + strings.Join(failed, ", ") + " failed; nobody else got in)"
	}
	if r.Observed.Exclusion != r.Declared.Exclusion {
		// The probe lowers the observed exclusion on any failed check of
		// a write path; tell an accepted write from a check that could
		// not complete.
		for _, c := range r.Checks {
			if c.Result == "FAIL" && acceptedWrite(c.Got) {
				return "**not safe** (`" + c.Name + "`: a write that should have been refused was accepted)"
			}
		}
		return "inconclusive: the lease scenarios passed, but some checks could not complete (see evidence)"
	}
	if !r.ProbeOK {
		if r.failed() == 0 {
			return "safe, with inconclusive checks (see evidence)"
		}
		return "safe, with deviations (see failed checks)"
	}
	return "safe"
}

// acceptedWrite reports whether a failed check's evidence says that the
// service accepted (or applied) a write that it should have refused, as
// drivertest words it: a conditional request that came back "success", more
// than one racing writer succeeding, or an object changed under a refused
// write.
func acceptedWrite(got string) bool {
	for _, s := range []string{": success", "writers succeeded", "the object was changed", "version changed",
		"but the winner was writer", "increments were lost or doubled"} {
		if strings.Contains(got, s) {
			return true
		}
	}
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// noise is what changes from one request to the next in an error (request
// ids, the random part of scratch keys) and says nothing about the service.
var noise = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`RequestID: [^,]*, HostID: [^,]*, `), ""},
	{regexp.MustCompile(`RequestID: [^,]*, `), ""},
	{regexp.MustCompile(`/probe/[0-9a-f]{12}/`), "/probe/…/"},
	{regexp.MustCompile(`-[0-9a-f]{6}/`), "-…/"},
	{regexp.MustCompile(`bucketlease-compat-[0-9a-f]{8}`), "BUCKET"},
}

// maxEvidence bounds one error's text in the table.
const maxEvidence = 600

// evidence is an error's text as the table shows it: one line, without
// request ids and random key parts, at most maxEvidence bytes.
func evidence(s string) string {
	s = oneLine(s)
	for _, n := range noise {
		s = n.re.ReplaceAllString(s, n.with)
	}
	if len(s) > maxEvidence {
		s = strings.ToValidUTF8(s[:maxEvidence], "") + "…"
	}
	return s
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
