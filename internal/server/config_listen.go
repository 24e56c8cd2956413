package server

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// CallbackKeysEnv is the environment variable that overrides
// Config.CallbackKeys.
const CallbackKeysEnv = "AGENTSLICE_CALLBACK_KEYS"

// DefaultListen is the address served on when none is configured.
const DefaultListen = "127.0.0.1:8080"

// resolveListen checks the listen address and the public URL.
func (c *Config) resolveListen(s *settings) error {
	bad := configErr
	s.listen = c.Listen
	if s.listen == "" {
		s.listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(s.listen); err != nil || port == "" {
		return bad("listen", "%q is not a host:port address (for example 127.0.0.1:8080 or :8080)", s.listen)
	}
	if c.PublicURL != "" {
		if err := checkBaseURL(c.PublicURL); err != nil {
			return bad("public_url", "%v", err)
		}
		s.publicURL = strings.TrimRight(c.PublicURL, "/")
	}
	return nil
}

// resolveCallbacks applies the callback URLs' lifetime.
func (c *Config) resolveCallbacks(s *settings) error {
	var err error
	s.callbackTTL, err = duration("callback_ttl", c.CallbackTTL, 30*24*time.Hour)
	return err
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must not carry a query or fragment", s)
	}
	return nil
}
