package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/thaw-dev/thaw/internal/certgen"
	"github.com/thaw-dev/thaw/platform/kube"
)

func init() { extraCommands = append(extraCommands, newCertgenCmd) }

type certgenFlags struct {
	kubeconfig, namespace, outputDir, service string
	dnsNames                                  []string
	ips                                       []net.IP
	names                                     certgen.Names
	opts                                      certgen.Options
}

// newCertgenCmd returns `thaw certgen`: it creates or renews the mutual TLS
// certificates of thaw and its Envoy fleet, as Kubernetes Secrets or files.
func newCertgenCmd(g *globalFlags) *cobra.Command {
	f := &certgenFlags{names: certgen.DefaultNames()}
	cmd := &cobra.Command{
		Use:   "certgen",
		Short: "Create or renew the certificates of mutual TLS between Envoy and thaw",
		Long: `thaw certgen makes a CA, thaw's server certificate and the Envoy fleet's
client certificate, and stores them as kubernetes.io/tls Secrets (tls.crt,
tls.key, ca.crt) in --namespace, or as files under --output-dir/<name>/.

It is idempotent: what is still good is kept, a certificate is renewed when
less than --renew-before is left, was signed by another CA or names other
hosts, and a new CA keeps the previous one in the trust bundles (ca.crt)
until it expires. manifests/ runs it as a Job at install and as a CronJob.
See docs/security.md.`,
		Example: `  thaw certgen                                   # Secrets in $POD_NAMESPACE (in a pod)
  thaw certgen --output-dir ./certs --server-dns-names localhost --server-ips 127.0.0.1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWithSignals(cmd, g, func(ctx context.Context, logger *zap.Logger) error {
				return runCertgen(ctx, logger, f)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, then $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.namespace, "namespace", kube.DefaultLeaseNamespace(), "namespace of the Secrets and of thaw's Service")
	fl.StringVar(&f.outputDir, "output-dir", "", "write files under this directory instead of Secrets (for thaw run outside a cluster)")
	fl.StringVar(&f.service, "service", "thaw-grpc", "thaw's gRPC Service: the server certificate names <service>, <service>.<ns>, <service>.<ns>.svc and <service>.<ns>.svc.cluster.local")
	fl.StringSliceVar(&f.dnsNames, "server-dns-names", nil, "DNS names of the server certificate instead of those from --service")
	fl.IPSliceVar(&f.ips, "server-ips", nil, "IP addresses added to the server certificate")
	fl.StringVar(&f.names.CA, "ca-secret", certgen.DefaultCASecret, "Secret (or directory) holding the CA and its key")
	fl.StringVar(&f.names.Server, "server-secret", certgen.DefaultServerSecret, "Secret (or directory) with thaw's certificate")
	fl.StringVar(&f.names.Envoy, "envoy-secret", certgen.DefaultEnvoySecret, "Secret (or directory) with the Envoy fleet's client certificate")
	fl.DurationVar(&f.opts.Validity, "validity", certgen.DefaultValidity, "validity of the server and client certificates (the CA: 10 years)")
	fl.DurationVar(&f.opts.RenewBefore, "renew-before", certgen.DefaultRenewBefore, "renew a certificate when less than this is left")
	fl.StringVar(&f.opts.ClientCommonName, "client-common-name", certgen.DefaultClientCommonName, "subject CN of the Envoy client certificate")
	return cmd
}

func runCertgen(ctx context.Context, logger *zap.Logger, f *certgenFlags) error {
	f.opts.ServerDNSNames, f.opts.ServerIPs = f.dnsNames, f.ips
	if len(f.opts.ServerDNSNames) == 0 {
		svc, ns := f.service, f.namespace
		f.opts.ServerDNSNames = []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
	}
	var st certgen.Store
	where := ""
	if f.outputDir != "" {
		st, where = &certgen.DirStore{Dir: f.outputDir, Names: f.names}, f.outputDir
	} else {
		cfg, err := kube.LoadRESTConfig(f.kubeconfig)
		if err != nil {
			return err
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
		st = &certgen.SecretStore{Client: client, Namespace: f.namespace, Names: f.names,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "thaw-certgen", "app.kubernetes.io/part-of": "thaw"}}
		where = "namespace " + f.namespace
	}
	changed, err := certgen.Run(ctx, st, f.opts, time.Now())
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		logger.Info("certificates are up to date; nothing written", zap.String("where", where))
		return nil
	}
	logger.Info("certificates written", zap.String("where", where), zap.Strings("changed", changed),
		zap.Strings("serverDNSNames", f.opts.ServerDNSNames))
	return nil
}
