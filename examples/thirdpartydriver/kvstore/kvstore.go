// Package kvstore is the object service the example driver talks to: a
// small HTTP server holding buckets of objects in memory, with conditional
// writes. It stands for whatever service a third-party driver is written
// for.
//
//	GET    /BUCKET/KEY  200 with the body and an ETag; 404 NoSuchKey or NoSuchBucket
//	PUT    /BUCKET/KEY  If-None-Match: * or If-Match: ETag; 200 with the new ETag, or 412
//	DELETE /BUCKET/KEY  If-Match: ETag; 204, or 412
//	GET    /BUCKET?prefix=P&after=K
//	                    200 with a JSON Page: the objects whose keys start
//	                    with P and sort after K, in lexical order, at most
//	                    PageSize of them, and Next, the key to pass as
//	                    after for the next page ("" on the last)
//
// Errors carry their code in the X-Error-Code header. A request without
// the right Authorization header is 403 AccessDenied.
package kvstore

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PageSize is the most objects one listing response holds.
const PageSize = 1000

// Page is one response of a listing.
type Page struct {
	Objects []Listed `json:"objects"`
	// Next is the after of the next page, or "" if this is the last.
	Next string `json:"next,omitempty"`
}

// Listed is one object of a listing.
type Listed struct {
	Key      string    `json:"key"`
	ETag     string    `json:"etag"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

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
	mod  time.Time
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
	if key == "" && r.Method == http.MethodGet {
		s.list(w, objs, r.URL.Query().Get("prefix"), r.URL.Query().Get("after"))
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
		next := object{data: body, n: cur.n + 1, mod: time.Now().UTC()}
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

// list writes the Page of objs after after whose keys start with prefix;
// s.mu is held.
func (s *Store) list(w http.ResponseWriter, objs map[string]object, prefix, after string) {
	var keys []string
	for k := range objs {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var p Page
	if len(keys) > PageSize {
		keys = keys[:PageSize]
		p.Next = keys[PageSize-1]
	}
	for _, k := range keys {
		o := objs[k]
		p.Objects = append(p.Objects, Listed{Key: k, ETag: o.etag, Size: int64(len(o.data)), Modified: o.mod})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p)
}
