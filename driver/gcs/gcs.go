package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/httpdate"
	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
)

// Scheme is the URL scheme this package registers.
const Scheme = "gs"

// name is the driver's name in errors.
const driverName = "gcs"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for gs:// URLs: the bucket, the
// prefix and the endpoint parameter (empty for Cloud Storage).
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	return u.Host, u.Path, u.Query().Get("endpoint"), nil
}

// Bucket is a Google Cloud Storage bucket. It is safe for concurrent use.
type Bucket struct {
	// bkt carries streamed writes and listings, ctl Get, Put and Delete;
	// one handle for a client passed to New.
	bkt, ctl *storage.BucketHandle

	// owned are the clients OpenURL created, and transports their HTTP
	// transports, which Close closes; both nil for a client passed to New,
	// which stays its caller's.
	owned      []*storage.Client
	transports []*http.Transport
	// emulated: the URL names an emulator; no KeyWriteInterval is declared.
	emulated  bool
	closeOnce sync.Once
	closeErr  error
}

// New returns the bucket named name, reached through client, which the
// caller keeps and closes.
func New(client *storage.Client, name string) *Bucket {
	h := client.Bucket(name)
	return &Bucket{bkt: h, ctl: h}
}

// Close closes the clients OpenURL created and their idle connections,
// once no operation is in flight; for a Bucket from New it does nothing.
// Closing twice returns the first result.
func (b *Bucket) Close() error {
	if b.owned == nil {
		return nil
	}
	b.closeOnce.Do(func() {
		for _, c := range b.owned {
			if err := c.Close(); err != nil && b.closeErr == nil {
				b.closeErr = fmt.Errorf("gcs: close the client: %w", err)
			}
		}
		for _, tr := range b.transports {
			tr.CloseIdleConnections()
		}
	})
	return b.closeErr
}

// KeyWriteInterval is the spacing between writes to one object name that
// Cloud Storage enforces: about one a second, a faster write being
// answered with 429 rateLimitExceeded.
const KeyWriteInterval = time.Second

// Capabilities declares Conditional exclusion, a conditional Delete,
// metadata, and KeyWriteInterval (but on an emulator).
func (b *Bucket) Capabilities() driver.Capabilities {
	c := driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true, KeyWriteInterval: KeyWriteInterval,
		Metadata: true, ListMetadata: true}
	if b.emulated {
		c.KeyWriteInterval = 0
	}
	return c
}

// Get reads the object and returns its body, its generation and the
// service's time, all from the one read response. Under opts.Metadata,
// where the response carries no x-goog-meta-* headers, the attributes are
// read pinned to that response's generation and metageneration (re-reading
// the object, up to metadataReads times, if that generation is gone).
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, driverName, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	for attempt := 1; ; attempt++ {
		var dates httpdate.Capture
		r, err := b.ctl.Object(key).NewReader(dates.Context(op.Context()))
		if err != nil {
			return nil, driver.Attrs{Time: serviceTime(&dates, time.Time{})}, fail(op, b.classify(ctx, err, driver.Condition{}), err)
		}
		st := serviceTime(&dates, r.Attrs.LastModified)
		if r.Attrs.Generation <= 0 {
			r.Close()
			return nil, driver.Attrs{Time: st}, op.Fail(nil, errors.New("the read response carried no object generation"))
		}
		a := driver.Attrs{Version: version(r.Attrs.Generation), Time: st}
		if opts.Metadata {
			md, again, err := b.metadata(op, key, r)
			if err != nil || (again && attempt < metadataReads) {
				r.Close()
				if err == nil {
					continue
				}
				return nil, driver.Attrs{Time: st}, fail(op, b.classify(ctx, err, driver.Condition{}), err)
			}
			if again {
				r.Close()
				return nil, driver.Attrs{Time: st}, op.Fail(nil, fmt.Errorf("the object changed %d times between its read and the read of its metadata", attempt))
			}
			a.Metadata = md
		}
		return r, a, nil
	}
}

// metadataReads is how many times Get reads an object whose generation is
// replaced before its metadata could be read.
const metadataReads = 3

// metadata returns the user metadata of the object r reads: the read
// response's, where it carried any, and otherwise the attributes of r's
// generation and metageneration. again reports that the generation is gone,
// or its metadata changed, since r's response: read the object again.
func (b *Bucket) metadata(op *driver.Op, key string, r *storage.Reader) (md driver.Metadata, again bool, err error) {
	if m := r.Metadata(); len(m) > 0 {
		return metadata.Lower(m), false, nil
	}
	obj := b.ctl.Object(key).Generation(r.Attrs.Generation)
	if r.Attrs.Metageneration > 0 {
		obj = obj.If(storage.Conditions{MetagenerationMatch: r.Attrs.Metageneration})
	}
	attrs, err := obj.Attrs(op.Context())
	var ge *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return nil, true, nil
	case errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed:
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading the metadata of generation %d: %w", r.Attrs.Generation, err)
	}
	return metadata.Lower(attrs.Metadata), false, nil
}

// Put uploads data with opts.Metadata in one request if opts.If holds and
// returns the new generation and the service's time, which it returns with
// a refusal too. The client library holds a copy of data while it sends
// it.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), driverName, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	cond := opts.If
	obj, err := b.object(b.ctl, key, cond)
	if err != nil {
		return driver.Attrs{}, op.Fail(driver.ErrPrecondition, err)
	}
	if cond != (driver.Condition{}) {
		obj = obj.Retryer(storage.WithErrorFunc(noRateLimitRetry))
	}
	// The Writer's context must outlive Close, and a cancel aborts the
	// upload; cancelling once Close returned releases its goroutine.
	var dates httpdate.Capture
	wctx, cancel := context.WithCancel(dates.Context(op.Context()))
	defer cancel()
	w := obj.NewWriter(wctx)
	// A chunk larger than the body makes one buffered request: with
	// ChunkSize 0 a cancelled stream still closes the multipart body, and
	// the service stores a torn object (docs/drivers.md, "One request per
	// write, and retries").
	w.ChunkSize = (len(data)/chunkAlign + 1) * chunkAlign
	w.ContentType = "application/octet-stream"
	w.Metadata = op.Metadata
	_, err = w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	st := serviceTime(&dates, time.Time{})
	if err != nil {
		return driver.Attrs{Time: st}, fail(op, b.classify(ctx, err, cond), err)
	}
	attrs := w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return driver.Attrs{Time: st}, op.Fail(nil, errors.New("the upload response carried no object generation"))
	}
	return driver.Attrs{Version: version(attrs.Generation), Time: st}, nil
}

// serviceTime is the service's time a call returns: the Date header the
// transport recorded under dates and, for a Get, the response's
// Last-Modified, both to the second. It is zero when no Date was recorded
// (a client not wrapped by ServiceTimeTransport, or no response).
func serviceTime(dates *httpdate.Capture, modified time.Time) driver.ServiceTime {
	d := dates.Date()
	if d.IsZero() {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: d, Modified: modified, Resolution: time.Second}
}

// ServiceTimeTransport returns rt (http.DefaultTransport if nil) wrapped
// so that a Bucket whose client uses it returns the service's time. Wrap
// the transport of a client passed to New with it.
func ServiceTimeTransport(rt http.RoundTripper) http.RoundTripper { return httpdate.Transport(rt) }

// object returns the handle of key in h under cond's ifGenerationMatch; a
// version that is not a generation is an error.
func (b *Bucket) object(h *storage.BucketHandle, key string, cond driver.Condition) (*storage.ObjectHandle, error) {
	obj := h.Object(key)
	if v, match := cond.Match(); match {
		g, err := generation(v)
		if err != nil {
			return nil, err
		}
		return obj.If(storage.Conditions{GenerationMatch: g}), nil
	}
	if cond == driver.IfAbsent() {
		return obj.If(storage.Conditions{DoesNotExist: true}), nil
	}
	return obj, nil
}

// Delete removes the object if cond holds. An unconditional Delete of a
// missing key succeeds; under IfMatch a missing key is ErrPrecondition.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.Capabilities(), driverName, key, cond)
	if err != nil {
		return err
	}
	obj := b.ctl.Object(key)
	if v, ok := cond.Match(); ok {
		g, err := generation(v)
		if err != nil {
			return op.Fail(driver.ErrPrecondition, err)
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	err = obj.Delete(op.Context())
	if err == nil {
		return nil
	}
	k := b.classify(ctx, err, cond)
	if k == driver.ErrNotExist && cond == (driver.Condition{}) {
		return nil
	}
	return fail(op, k, err)
}

// fail is op.Fail, and for a rate-limited answer op.RateLimited with the
// wait the service asked for (its Retry-After header), where it gave one.
func fail(op *driver.Op, k, err error) error {
	if k != driver.ErrRateLimited {
		return op.Fail(k, err)
	}
	var wait time.Duration
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Header != nil {
		now, perr := http.ParseTime(ge.Header.Get("Date"))
		if perr != nil {
			now = time.Now()
		}
		wait, _ = httpdate.RetryAfter(ge.Header.Get("Retry-After"), now)
	}
	return op.RateLimited(err, wait)
}

// rateLimited reports whether the service refused a request for its
// rate: HTTP 429, or the reason rateLimitExceeded (or
// userRateLimitExceeded, which other Google APIs send with 403).
func rateLimited(ge *googleapi.Error) bool {
	if ge.Code == http.StatusTooManyRequests {
		return true
	}
	for _, e := range ge.Errors {
		if e.Reason == "rateLimitExceeded" || e.Reason == "userRateLimitExceeded" {
			return true
		}
	}
	return false
}

// noRateLimitRetry is storage.ShouldRetry for a conditional write, but a
// rate-limited answer is returned (driver.ErrRateLimited) rather than
// retried: a retry's refusal would have to be called ErrOutcomeUnknown
// although no attempt landed.
func noRateLimitRetry(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) && rateLimited(ge) {
		return false
	}
	return storage.ShouldRetry(err)
}

// classify maps a failed request to the contract's kinds by the service's
// reason, not the status alone; a missing object is told from a missing
// bucket, which the client library reports the same way, by a lookup.
func (b *Bucket) classify(ctx context.Context, err error, cond driver.Condition) error {
	var ae *auth.Error
	if errors.As(err, &ae) {
		// The credentials could not get a token.
		return driver.ErrPermission
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch {
		case rateLimited(ge):
			return driver.ErrRateLimited
		case ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden:
			return driver.ErrPermission
		case ge.Code == http.StatusPreconditionFailed && cond != (driver.Condition{}) && conditionNotMet(ge):
			return driver.ErrPrecondition
		}
	}
	if errors.Is(err, storage.ErrBucketNotExist) {
		return driver.ErrBucketNotExist
	}
	notFound := errors.Is(err, storage.ErrObjectNotExist) || (ge != nil && ge.Code == http.StatusNotFound)
	if !notFound {
		return nil
	}
	if _, aerr := b.ctl.Attrs(ctx); errors.Is(aerr, storage.ErrBucketNotExist) {
		return driver.ErrBucketNotExist
	}
	if _, match := cond.Match(); match {
		return driver.ErrPrecondition
	}
	if cond == driver.IfAbsent() {
		return nil
	}
	return driver.ErrNotExist
}

// conditionNotMet reports whether a 412 says that a precondition did not
// hold: the reason conditionNotMet, or (from a server that gives no
// reason) a message saying so.
func conditionNotMet(ge *googleapi.Error) bool {
	for _, e := range ge.Errors {
		if e.Reason == "conditionNotMet" {
			return true
		}
	}
	if len(ge.Errors) == 0 {
		m := strings.ToLower(ge.Message + " " + ge.Body)
		return strings.Contains(m, "precondition") || strings.Contains(m, "conditionnotmet")
	}
	return false
}

// version renders a generation as a Version.
func version(g int64) driver.Version { return driver.Version(strconv.FormatInt(g, 10)) }

// generation parses a Version as a positive decimal generation. Anything
// else is refused before sending: GenerationMatch 0 means "does not
// exist", and the client library ignores a negative one.
func generation(v driver.Version) (int64, error) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 || version(g) != v {
		return 0, fmt.Errorf("version %q is not a Cloud Storage object generation, so it matches no object; nothing was sent", string(v))
	}
	return g, nil
}
