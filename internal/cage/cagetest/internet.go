package cagetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// LabelInternet marks the networks and containers of a FakeInternet.
const LabelInternet = "io.mcpcage.test.internet"

// Internet is an egress test's own "internet": an --internal Docker network
// (nothing on it reaches beyond this machine) with one fakehost container per
// host, each answering to its names through Docker's DNS on that network,
// with TLS certificates from a CA the test made.
type Internet struct {
	cli     *client.Client
	Network string            // the network's name: the gateway's upstream
	CA      []byte            // the CA certificate, PEM
	Addrs   map[string]string // host key -> its address on the network
	ids     []string
	netID   string
}

// NewInternet starts one fakehost per entry of hosts (key: a label for
// Addrs, value: the names it answers to).
func NewInternet(ctx context.Context, cli *client.Client, hosts map[string][]string) (*Internet, error) {
	if _, err := BuildFakeHostImage(ctx, cli); err != nil {
		return nil, err
	}
	var all []string
	for _, names := range hosts {
		all = append(all, names...)
	}
	caPEM, certPEM, keyPEM, err := certificates(all)
	if err != nil {
		return nil, err
	}
	rnd := make([]byte, 4)
	rand.Read(rnd)
	in := &Internet{cli: cli, Network: "mcpcage-test-internet-" + hex.EncodeToString(rnd), CA: caPEM, Addrs: map[string]string{}}
	labels := map[string]string{LabelInternet: "1"}
	created, err := cli.NetworkCreate(ctx, in.Network, network.CreateOptions{Driver: "bridge", Internal: true, Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("creating the test internet: %w", err)
	}
	in.netID = created.ID
	for key, names := range hosts {
		c, err := cli.ContainerCreate(ctx, &container.Config{
			Image:  FakeHostImage,
			Env:    []string{"FAKEHOST_NAME=" + names[0], "FAKEHOST_CERT=" + string(certPEM), "FAKEHOST_KEY=" + string(keyPEM)},
			Labels: labels,
		}, &container.HostConfig{NetworkMode: container.NetworkMode(in.Network)}, &network.NetworkingConfig{
			EndpointsConfig: map[string]*network.EndpointSettings{in.Network: {Aliases: names}},
		}, nil, in.Network+"-"+key)
		if err != nil {
			in.Close()
			return nil, fmt.Errorf("creating fake host %s: %w", key, err)
		}
		in.ids = append(in.ids, c.ID)
		if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			in.Close()
			return nil, fmt.Errorf("starting fake host %s: %w", key, err)
		}
		info, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil || info.NetworkSettings == nil || info.NetworkSettings.Networks[in.Network] == nil {
			in.Close()
			return nil, fmt.Errorf("inspecting fake host %s: %v", key, err)
		}
		in.Addrs[key] = info.NetworkSettings.Networks[in.Network].IPAddress
	}
	return in, nil
}

// Close removes the hosts and the network.
func (in *Internet) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range in.ids {
		_ = in.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	}
	if in.netID != "" {
		_ = in.cli.NetworkRemove(ctx, in.netID)
	}
}

// certificates makes a CA and one server certificate for names.
func certificates(names []string) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpcage test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
