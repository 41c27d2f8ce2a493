package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// IsURL reports whether dsn names a PostgreSQL database: a postgres:// or
// postgresql:// URL.
func IsURL(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Redact returns dsn with any password replaced by "xxxxx", for messages and
// logs. A dsn that is not a parseable URL is reduced to its scheme.
func Redact(dsn string) string {
	if pairs, ok := parseKeywordDSN(dsn); ok {
		return redactKeywordDSN(dsn, pairs)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://(unparseable URL)"
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// scrub removes the password of dsn from msg wherever a library quoted it
// (pgx and net/url quote connection strings in some errors).
func scrub(msg, dsn string) string {
	var secrets []string
	if pw := Password(dsn); pw != "" {
		secrets = append(secrets, pw)
	}
	if u, err := url.Parse(dsn); err == nil {
		if pw, ok := u.User.Password(); ok {
			secrets = append(secrets, pw, url.UserPassword("", pw).String()[1:])
		}
		for _, k := range []string{"password", "sslpassword"} {
			if v := u.Query().Get(k); v != "" {
				secrets = append(secrets, v, url.QueryEscape(v))
			}
		}
	} else if m := userinfoPassword.FindStringSubmatch(dsn); m != nil {
		secrets = append(secrets, m[1])
	}
	for _, s := range secrets {
		if len(s) > 0 {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

// userinfoPassword finds user:password@ in a URL that net/url rejects.
var userinfoPassword = regexp.MustCompile(`://[^:/@]*:([^@]+)@`)

// libpq keyword/value connection strings ("host=db user=app password=…"):
// a DSN of this form names a PostgreSQL database just as a postgres:// URL
// does (pgx parses both). It must never be taken for a SQLite file name,
// which would create a file named after it and print its password.

// keywordDSNKeys are libpq's connection keywords; a keyword DSN starts
// with one of them.
var keywordDSNKeys = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "connect_timeout": true, "client_encoding": true, "options": true,
	"application_name": true, "sslmode": true, "sslcert": true, "sslkey": true, "sslrootcert": true,
	"sslpassword": true, "service": true, "target_session_attrs": true, "search_path": true,
	"sslsni": true, "require_auth": true, "channel_binding": true, "krbsrvname": true, "gssencmode": true,
	"load_balance_hosts": true, "keepalives": true, "sslnegotiation": true, "sslcrl": true,
}

// keywordPair is one key=value of a keyword DSN, with where its value
// starts and ends in the string.
type keywordPair struct {
	key, value string
	start, end int
}

// parseKeywordDSN splits a libpq keyword/value string (values may be
// single-quoted with backslash escapes). ok is false when s is not one.
func parseKeywordDSN(s string) (pairs []keywordPair, ok bool) {
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return pairs, len(pairs) > 0
		}
		k := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[k:i]
		skip()
		if i >= len(s) || s[i] != '=' || !keywordDSNKeys[strings.ToLower(key)] {
			return nil, false
		}
		i++
		skip()
		start := i
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					v.WriteByte(s[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		pairs = append(pairs, keywordPair{key: strings.ToLower(key), value: v.String(), start: start, end: i})
	}
}

// IsKeywordDSN reports whether dsn is a libpq keyword/value connection
// string ("host=localhost dbname=crow").
func IsKeywordDSN(dsn string) bool {
	_, ok := parseKeywordDSN(dsn)
	return ok
}

// IsDSN reports whether dsn names a PostgreSQL database in either form.
func IsDSN(dsn string) bool { return IsURL(dsn) || IsKeywordDSN(dsn) }

// Password is the password dsn carries (URL userinfo, a password or
// sslpassword parameter, a keyword DSN's password=), or "".
func Password(dsn string) string {
	if pairs, ok := parseKeywordDSN(dsn); ok {
		for _, p := range pairs {
			if p.key == "password" || p.key == "sslpassword" {
				return p.value
			}
		}
		return ""
	}
	if !IsURL(dsn) {
		return ""
	}
	u, err := url.Parse(dsn)
	if err != nil {
		if m := userinfoPassword.FindStringSubmatch(dsn); m != nil {
			return m[1]
		}
		return ""
	}
	if pw, ok := u.User.Password(); ok {
		return pw
	}
	for _, k := range []string{"password", "sslpassword"} {
		if v := u.Query().Get(k); v != "" {
			return v
		}
	}
	return ""
}

// redactKeywordDSN masks the password values of a keyword DSN.
func redactKeywordDSN(dsn string, pairs []keywordPair) string {
	var b strings.Builder
	last := 0
	for _, p := range pairs {
		if p.key != "password" && p.key != "sslpassword" {
			continue
		}
		b.WriteString(dsn[last:p.start])
		b.WriteString("xxxxx")
		last = p.end
	}
	b.WriteString(dsn[last:])
	return b.String()
}
