// Command probe is the smoke tests' network client. It resolves a name with
// Go's own resolver (which honours the pod's resolv.conf search list, unlike
// busybox nslookup, and needs no NSS modules, unlike static glibc), then
// fetches a URL from the resolved address over TCP.
//
// Usage: probe get http://NAME:PORT/PATH
// Prints "resolved NAME to ADDR[,ADDR]" and then the response body; exits 1
// on any failure.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "get" {
		fmt.Fprintln(os.Stderr, "usage: probe get http://NAME:PORT/PATH")
		os.Exit(2)
	}
	if err := get(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func get(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("bad URL %q", raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r := &net.Resolver{PreferGo: true}
	addrs, err := r.LookupHost(ctx, u.Hostname())
	if err != nil {
		return err
	}
	fmt.Printf("resolved %s to %s\n", u.Hostname(), strings.Join(addrs, ","))
	// Connect to the address just resolved, so the TCP connection proves
	// the DNS answer.
	target := *u
	target.Host = net.JoinHostPort(addrs[0], u.Port())
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(target.String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target.String(), resp.Status)
	}
	fmt.Print(string(body))
	return nil
}
