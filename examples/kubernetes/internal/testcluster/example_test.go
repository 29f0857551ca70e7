package testcluster_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"

	"github.com/goodsched/goodsched/examples/kubernetes/internal/testcluster"
)

// The harness serves the API server over TLS with certificates of its own
// CA: a serving certificate for localhost and 127.0.0.1 verifies against it.
func ExampleServingCert() {
	ca, caKey, err := testcluster.SelfSignedCA("goodsched-test-ca")
	if err != nil {
		log.Fatal(err)
	}
	certPEM, keyPEM, err := testcluster.ServingCert(ca, caKey, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		log.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		log.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"localhost", "127.0.0.1", "example.com"} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		fmt.Printf("%s: verified %v\n", name, err == nil)
	}
	// Output:
	// localhost: verified true
	// 127.0.0.1: verified true
	// example.com: verified false
}
