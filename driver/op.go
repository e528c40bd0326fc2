package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// maxKeyLen is the longest key CheckKey accepts, in bytes: the limit of S3,
// GCS and Azure Blob alike.
const maxKeyLen = 1024

// CheckKey reports whether key follows the portable key rule, which every
// driver applies so that two different keys never name one object on any
// service: a non-empty UTF-8 string of at most 1024 bytes, made of
// segments separated by single slashes, no segment empty (so no leading,
// trailing or double slash), "." or "..", and no backslash or control
// character. MinIO would store "/a/k" as "a/k", Azure Blob "a\k" as "a/k",
// and a service that cleans paths "a/./k" as "a/k"; the rule refuses all of
// them. Nor may a key hold U+FFFE or U+FFFF: valid UTF-8, but not
// characters XML 1.0 can carry, and S3 and Azure Blob list keys in XML (S3
// listed such a key as U+FFFD, a key never written, and left it out;
// Azurite failed the whole listing), so that a key written with them
// could not be listed back on every service. Its error wraps ErrInvalidKey
// and says which part of the rule the key breaks.
func CheckKey(key string) error {
	if why := keyProblem(key); why != "" {
		return fmt.Errorf("%w %s", ErrInvalidKey, why)
	}
	return nil
}

// keyProblem explains why key breaks the portable key rule, or is "".
func keyProblem(key string) string {
	why := ""
	switch {
	case key == "":
		why = "it is empty"
	case len(key) > maxKeyLen:
		why = fmt.Sprintf("it is %d bytes long, more than %d", len(key), maxKeyLen)
	case !utf8.ValidString(key):
		why = "it is not valid UTF-8"
	case strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		why = "it contains a control character"
	case strings.Contains(key, `\`):
		why = `it contains a backslash, which some services store as "/"`
	case strings.ContainsAny(key, "\ufffe\uffff"):
		why = "it contains the noncharacter U+FFFE or U+FFFF, which XML 1.0 cannot carry, so that S3's and Azure's listings garble or drop the key"
	default:
		for _, seg := range strings.Split(key, "/") {
			switch seg {
			case "":
				why = "it has an empty segment (a leading, trailing or double slash), which some services drop"
			case ".", "..":
				why = fmt.Sprintf("it has a %q segment, which some services resolve", seg)
			}
			if why != "" {
				break
			}
		}
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%q: %s; a key is a non-empty UTF-8 string of at most %d bytes whose segments, "+
		"separated by single slashes, are not empty, \".\" or \"..\", with no backslash, control character, U+FFFE or U+FFFF",
		clipKey(key), why, maxKeyLen)
}

func clipKey(k string) string {
	if len(k) > 80 {
		return k[:80] + "…"
	}
	return k
}

// checkVersion reports whether v could be a version a service issued, so
// that IfMatch(v) means "the current version is v" on every service. It
// refuses the empty Version, which most services read as no condition, and
// anything a service would read as a wildcard or a list of versions ("*",
// "\"*\"", a comma, a weak W/ tag), or that is not one token of printable
// ASCII. No service issues such a version, so IfMatch of it can never hold:
// its error wraps ErrPrecondition.
func checkVersion(v Version) error {
	if why := versionProblem(v); why != "" {
		return fmt.Errorf("%w: %s", ErrPrecondition, why)
	}
	return nil
}

// versionProblem explains why v cannot be a version a service issued, or
// is "".
func versionProblem(v Version) string {
	s := string(v)
	why := ""
	switch {
	case s == "" || s == `""`:
		why = "the empty version, which services read as no condition"
	case len(s) > 256:
		why = "longer than any version a service issues"
	case strings.ContainsAny(s, "*,"):
		why = "a wildcard or a list, which services read as matching any version"
	case strings.HasPrefix(s, "W/"):
		why = "a weak entity tag"
	case strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r >= 0x7f }):
		why = "not one token of printable ASCII"
	case strings.Contains(strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`), `"`) ||
		strings.HasPrefix(s, `"`) != strings.HasSuffix(s, `"`) || s == `"`:
		why = "quoted in a way no service quotes a version"
	}
	if why == "" {
		return ""
	}
	return fmt.Sprintf("version %q is %s; it matches no object, so nothing was sent", clipKey(s), why)
}

// opName names the operation an Op is, as its errors name it.
type opName string

const (
	opGet    opName = "get"
	opPut    opName = "put"
	opDelete opName = "delete"
	opList   opName = "list"
)

// Op is one operation of a driver, and the one place the contract's
// mechanical rules are enforced, so that a driver is only its SDK's mapping.
// A driver's method starts with BeginGet, BeginPut or BeginDelete (a
// listing with Listing), returns its error if there is one, sends its
// request with Op.Context, and builds every error with Op.Fail:
//
//	op, err := driver.BeginPut(ctx, b.Capabilities(), "mydriver", key, opts)
//	if err != nil {
//		return "", err
//	}
//	resp, err := b.client.Put(op.Context(), ...)
//	if err != nil {
//		return "", op.Fail(classify(err), err)
//	}
type Op struct {
	// Metadata is what a Put begun by BeginPut stores with the object.
	Metadata Metadata

	driver string    // the driver's name in errors
	name   string    // "get", "put", "delete" or "list"
	key    string    // the object key, or the listing's prefix
	cond   Condition // the condition of a put or delete
	ctx    context.Context
	sent   *sentCount
}

// sentCount counts the requests started through an Op's context, per
// host: a credential refresh (STS, IMDS, an identity provider) sent with
// the same context goes to another host and is not an attempt of the
// operation. It counts in GetConn, which the HTTP transport calls in the
// caller's goroutine before each request, rather than in WroteRequest,
// which may be called after the response has come back; a request that
// then never reached the service counts too, which can only turn a refusal
// into ErrOutcomeUnknown, never the reverse.
type sentCount struct {
	mu      sync.Mutex
	host    string // of the latest request
	perHost map[string]int
}

func (c *sentCount) getConn(hostPort string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perHost == nil {
		c.perHost = map[string]int{}
	}
	c.host = hostPort
	c.perHost[hostPort]++
}

// last returns how many requests went to the host of the latest one.
func (c *sentCount) last() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perHost[c.host]
}

// BeginGet starts a Get of key. It returns the error the driver must return
// at once, without sending anything, if the contract settles the operation
// before any request: ctx has ended (an error matching ctx.Err()), or the
// key breaks the portable key rule (CheckKey: ErrInvalidKey).
func BeginGet(ctx context.Context, driverName, key string) (*Op, error) {
	return begin(ctx, Capabilities{}, driverName, opGet, key, Condition{})
}

// BeginDelete starts a Delete of key under cond, as BeginGet starts a Get;
// it also refuses IfAbsent, and IfMatch where caps does not declare
// ConditionalDelete, with ErrUnsupported (a condition the service would
// ignore is never sent), and IfMatch of a version no service issues with
// ErrPrecondition.
func BeginDelete(ctx context.Context, caps Capabilities, driverName, key string, cond Condition) (*Op, error) {
	return begin(ctx, caps, driverName, opDelete, key, cond)
}

// begin starts an operation as BeginGet, BeginDelete and BeginPut describe;
// a Get passes the zero Condition.
func begin(ctx context.Context, caps Capabilities, driverName string, op opName, key string, cond Condition) (*Op, error) {
	o := &Op{driver: driverName, name: string(op), key: key, cond: cond, ctx: ctx, sent: &sentCount{}}
	if err := ctx.Err(); err != nil {
		return o, o.Fail(nil, err)
	}
	if keyProblem(key) != "" {
		return o, o.Fail(ErrInvalidKey, errors.New("key "+keyProblem(key)))
	}
	if op == opDelete && cond == IfAbsent() {
		return o, o.Fail(ErrUnsupported, errors.New("IfAbsent makes no sense for a delete"))
	}
	if v, match := cond.Match(); match {
		if op == opDelete && !caps.ConditionalDelete {
			return o, o.Fail(ErrUnsupported, errors.New("the driver declares no conditional delete (its service "+
				"would ignore the condition), so the condition is not sent"))
		}
		if versionProblem(v) != "" {
			return o, o.Fail(ErrPrecondition, errors.New(versionProblem(v)))
		}
	}
	return o, nil
}

// BeginPut starts a Put or a PutStream of key under opts, as BeginDelete
// starts a Delete under opts.If (IfAbsent included). Where caps declares
// Metadata, it also refuses metadata that breaks the portable rule
// (Metadata.Validate) with ErrInvalidMetadata, and the Op carries a copy of
// opts.Metadata for the driver to send; a driver that does not declare it
// writes without the metadata, and the Op's Metadata is nil.
func BeginPut(ctx context.Context, caps Capabilities, driverName, key string, opts PutOptions) (*Op, error) {
	o, err := begin(ctx, caps, driverName, opPut, key, opts.If)
	if err != nil || !caps.Metadata {
		return o, err
	}
	if err := opts.Metadata.Validate(); err != nil {
		return o, o.Fail(nil, fmt.Errorf("%w; nothing was written", err))
	}
	o.Metadata = maps.Clone(opts.Metadata)
	return o, nil
}

// Context returns the operation's context with an HTTP client trace that
// counts the requests started with it, per host, so that Fail can tell a
// refusal of the first attempt from one after the client library retried.
// A driver whose SDK speaks HTTP passes it to the SDK call that sends the
// operation's request; the trace composes with any trace the caller put in
// ctx.
func (o *Op) Context() context.Context {
	return httptrace.WithClientTrace(o.ctx, &httptrace.ClientTrace{GetConn: o.sent.getConn})
}

// requests returns how many requests started through Context went to the
// host of the latest one: the attempts of the operation's own request, not
// counting requests the SDK sent elsewhere with the same context (a token
// or credential refresh).
func (o *Op) requests() int { return o.sent.last() }

// Fail returns the *OpError for the operation: kind is the classification
// (one of the sentinels, or nil), err the service's or SDK's error, kept in
// the chain and passed through withContext so that an ended context shows.
// If kind is ErrPrecondition but more than one request was started through
// Context, the refusal may be the service seeing this operation's own
// earlier attempt, so the kind becomes ErrOutcomeUnknown.
func (o *Op) Fail(kind, err error) error {
	return o.fail(kind, err, true)
}

// Attempts returns how many requests started through Context went to the
// host of the latest one: more than one if the client library retried.
func (o *Op) Attempts() int { return o.requests() }

// RateLimited returns the *OpError for an operation the service refused
// for its rate (ErrRateLimited): err is the service's or SDK's error, and
// retryAfter the wait the service asked for (its Retry-After), or 0 where
// it named none. It is never turned into ErrOutcomeUnknown: a rate-limited
// answer says that this attempt was not applied, and a driver that let
// its client library send the write more than once reports it only when
// the last attempt was rate-limited too.
func (o *Op) RateLimited(err error, retryAfter time.Duration) error {
	e := o.fail(ErrRateLimited, err, false).(*OpError)
	e.retryAfter = max(retryAfter, 0)
	return e
}

// FailSettled is Fail with kind kept as it is, never turned from
// ErrPrecondition into ErrOutcomeUnknown: for a failure whose outcome is
// known although more than one request went through Context (a write the
// driver settled by reading the object back; the parts of a streamed
// write, whose commit is judged by its own Step).
func (o *Op) FailSettled(kind, err error) error {
	return o.fail(kind, err, false)
}

// Step returns an Op for the request that completes o's operation (the
// commit of a streamed write), on o's context, whose Fail judges the
// attempts of that request alone.
func (o *Op) Step() *Op {
	return &Op{driver: o.driver, name: o.name, key: o.key, cond: o.cond, ctx: o.ctx, sent: &sentCount{}}
}

func (o *Op) fail(kind, err error, upgrade bool) error {
	if upgrade && kind == ErrPrecondition && o.requests() > 1 {
		kind = ErrOutcomeUnknown
		err = fmt.Errorf("the client library sent the write %d times and a later attempt was refused, "+
			"so an earlier one may have landed; read the object back: %w", o.requests(), err)
	}
	if err != nil {
		err = withContext(o.ctx, err)
	} else if cerr := o.ctx.Err(); cerr != nil && kind == nil {
		err = cerr
	}
	return &OpError{Driver: o.driver, Op: o.name, Key: o.key, Cond: o.cond, Kind: kind, Err: err}
}
