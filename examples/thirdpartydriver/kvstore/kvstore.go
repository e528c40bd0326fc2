// Package kvstore is the object service the example driver talks to: a
// small HTTP server holding buckets of objects in memory, with conditional
// writes. It stands for whatever service a third-party driver is written
// for.
//
//	GET    /BUCKET/KEY  200 with the body and an ETag; 404 NoSuchKey or NoSuchBucket
//	PUT    /BUCKET/KEY  If-None-Match: * or If-Match: ETag; 200 with the new ETag, or 412
//	DELETE /BUCKET/KEY  If-Match: ETag; 204, or 412
//
// Errors carry their code in the X-Error-Code header. A request without
// the right Authorization header is 403 AccessDenied.
package kvstore

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Store is the service. The zero value is not usable; use New.
type Store struct {
	// Token is the bearer token requests must carry.
	Token string
	// Counters makes versions per-key counters (1, 2, 3...) instead of
	// random ETags: the mistake the broken variant of the example makes.
	Counters bool

	mu      sync.Mutex
	buckets map[string]map[string]object
}

type object struct {
	data []byte
	etag string
	n    int
}

// New returns a store holding the named empty buckets.
func New(token string, buckets ...string) *Store {
	s := &Store{Token: token, buckets: map[string]map[string]object{}}
	for _, b := range buckets {
		s.buckets[b] = map[string]object{}
	}
	return s
}

func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("X-Error-Code", code)
	w.WriteHeader(status)
}

// ServeHTTP serves the API above.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		fail(w, http.StatusForbidden, "AccessDenied")
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var body []byte
	if r.Method == http.MethodPut {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return // the body was cut short: store nothing
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	objs, ok := s.buckets[bucket]
	if !ok {
		fail(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	cur, exists := objs[key]
	ifMatch, ifNone := r.Header.Get("If-Match"), r.Header.Get("If-None-Match")
	if (ifNone == "*" && exists) || (ifMatch != "" && (!exists || ifMatch != cur.etag)) {
		fail(w, http.StatusPreconditionFailed, "PreconditionFailed")
		return
	}
	switch r.Method {
	case http.MethodGet:
		if !exists {
			fail(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		w.Header().Set("ETag", cur.etag)
		_, _ = w.Write(cur.data)
	case http.MethodPut:
		next := object{data: body, n: cur.n + 1}
		if s.Counters {
			next.etag = strconv.Itoa(next.n)
		} else {
			var b [16]byte
			rand.Read(b[:])
			next.etag = `"` + hex.EncodeToString(b[:]) + `"`
		}
		objs[key] = next
		w.Header().Set("ETag", next.etag)
	case http.MethodDelete:
		delete(objs, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
	}
}
