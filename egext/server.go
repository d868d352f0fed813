package egext

import (
	"context"
	"errors"
	"fmt"

	egpb "github.com/envoyproxy/gateway/proto/extension"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Server answers EG's EnvoyGatewayExtension hooks. Hooks thaw does not
// subscribe to (EG calls only those named in extensionManager.hooks) answer
// Unimplemented.
type Server struct {
	egpb.UnimplementedEnvoyGatewayExtensionServer
	log  *zap.Logger
	opts Options
	m    *hookMetrics
}

var _ egpb.EnvoyGatewayExtensionServer = (*Server)(nil)

// NewServer returns a Server; opts are checked at once (an error wraps
// ErrInvalidOptions) so a bad flag fails at startup, not per hook call.
func NewServer(log *zap.Logger, opts Options) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	opts = opts.withDefaults()
	if opts.InitialFetchTimeout < 0 {
		return nil, errors.Join(ErrInvalidOptions, errors.New("InitialFetchTimeout must be > 0"))
	}
	if err := opts.XDS.Validate(); err != nil {
		return nil, errors.Join(ErrInvalidOptions, err)
	}
	m, err := newHookMetrics(opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("egext metrics: %w", err)
	}
	return &Server{log: log, opts: opts, m: m}, nil
}

// Register adds the EnvoyGatewayExtension service to g.
func (s *Server) Register(g *grpc.Server) { egpb.RegisterEnvoyGatewayExtensionServer(g, s) }

// PostClusterModify answers for clusters of Revision backends (see
// Cluster). A cluster with no Revision, a bad one or more than one comes
// back unchanged (its route answers 500, see PostRouteModify).
func (s *Server) PostClusterModify(ctx context.Context, req *egpb.PostClusterModifyRequest) (*egpb.PostClusterModifyResponse, error) {
	start := s.opts.Clock.Now()
	resp, outcome, err := s.postClusterModify(ctx, req)
	s.m.observe("cluster", outcome, s.opts.Clock.Since(start))
	return resp, err
}

func (s *Server) postClusterModify(_ context.Context, req *egpb.PostClusterModifyRequest) (*egpb.PostClusterModifyResponse, string, error) {
	be, err := onlyBackend(resources(req.GetPostClusterContext().GetBackendExtensionResources()), s.opts)
	if errors.Is(err, ErrNoRevision) {
		return &egpb.PostClusterModifyResponse{Cluster: req.GetCluster()}, outcomeUnchanged, nil
	}
	if err != nil {
		// Not an error to EG: with failOpen false EG v1.9 would skip the
		// whole translation, freezing every route. The cluster stays EG's
		// (no endpoints) and PostRouteModify answers the route with 500.
		s.log.Warn("EG cluster left unchanged: its route answers 500", zap.String("cluster", req.GetCluster().GetName()), zap.Error(err))
		return &egpb.PostClusterModifyResponse{Cluster: req.GetCluster()}, outcomeInvalid, nil
	}
	var c *clusterv3.Cluster
	if be.split != nil {
		c, err = SplitCluster(req.GetCluster(), *be.split)
	} else {
		c, err = Cluster(req.GetCluster(), *be.rev, s.opts)
	}
	if err != nil {
		s.log.Error("EG cluster hook failed", zap.String("backend", be.key()), zap.Error(err))
		return nil, outcomeError, status.Error(codes.Internal, err.Error())
	}
	return &egpb.PostClusterModifyResponse{Cluster: c}, outcomeModified, nil
}

// PostRouteModify answers for routes of Revision backends (see Route). A
// route with no Revision comes back unchanged; one with a bad Revision or
// more than one answers 500 with the reason (InvalidRoute), so only that
// route fails and EG keeps translating the others.
func (s *Server) PostRouteModify(ctx context.Context, req *egpb.PostRouteModifyRequest) (*egpb.PostRouteModifyResponse, error) {
	start := s.opts.Clock.Now()
	resp, outcome, err := s.postRouteModify(ctx, req)
	s.m.observe("route", outcome, s.opts.Clock.Since(start))
	return resp, err
}

func (s *Server) postRouteModify(_ context.Context, req *egpb.PostRouteModifyRequest) (*egpb.PostRouteModifyResponse, string, error) {
	be, err := onlyBackend(resources(req.GetPostRouteContext().GetExtensionResources()), s.opts)
	if errors.Is(err, ErrNoRevision) {
		return &egpb.PostRouteModifyResponse{Route: req.GetRoute()}, outcomeUnchanged, nil
	}
	if err != nil {
		s.log.Warn("EG route answers 500: invalid thaw backend", zap.String("route", req.GetRoute().GetName()), zap.Error(err))
		r, rerr := InvalidRoute(req.GetRoute(), err)
		if rerr != nil {
			return nil, outcomeError, status.Error(codes.Internal, rerr.Error())
		}
		return &egpb.PostRouteModifyResponse{Route: r}, outcomeInvalid, nil
	}
	var r *routev3.Route
	if be.split != nil {
		r, err = SplitRoute(req.GetRoute(), *be.split, s.opts)
	} else if r, err = Route(req.GetRoute(), *be.rev); err == nil {
		r, err = ModuleRoute(r, be.rev.Key, s.opts)
	}
	if err != nil {
		s.log.Error("EG route hook failed", zap.String("backend", be.key()), zap.Error(err))
		return nil, outcomeError, status.Error(codes.Internal, err.Error())
	}
	return &egpb.PostRouteModifyResponse{Route: r}, outcomeModified, nil
}

// PostTranslateModify adds the clusters of RevisionSplit members and their
// tag hosts (see Translate) and, with the activator module, the module's
// filter in the HTTP listeners serving revision routes (ModuleListeners);
// every other resource comes back as EG sent it. EG calls it only when extensionManager.hooks.xdsTranslator.post
// lists Translation.
func (s *Server) PostTranslateModify(ctx context.Context, req *egpb.PostTranslateModifyRequest) (*egpb.PostTranslateModifyResponse, error) {
	start := s.opts.Clock.Now()
	clusters, routes, err := Translate(req.GetClusters(), req.GetRoutes(), s.opts)
	listeners := req.GetListeners()
	if err == nil && s.opts.XDS.Module != nil {
		if listeners == nil {
			s.log.Error("activator module: EG sent no listeners, so revision routes do not run the module; " +
				"set extensionManager.hooks.xdsTranslator.translation.listener.includeAll: true (docs/envoy-gateway.md)")
		}
		if routes == nil {
			s.log.Warn("activator module: EG sent no route configurations (translation.route.includeAll unset): the module filter goes into every HTTP listener")
		}
		var skipped error
		listeners, skipped, err = ModuleListeners(listeners, routes, s.opts)
		if skipped != nil {
			s.log.Error("activator module: listeners left without the module's filter (their Revision routes do not run it)", zap.Error(skipped))
		}
	}
	outcome := outcomeModified
	if err != nil {
		outcome = outcomeError
		s.log.Error("EG translation hook failed", zap.Error(err))
	}
	s.m.observe("translate", outcome, s.opts.Clock.Since(start))
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &egpb.PostTranslateModifyResponse{
		Clusters: clusters, Secrets: req.GetSecrets(), Listeners: listeners, Routes: routes,
	}, nil
}

func resources(rs []*egpb.ExtensionResource) [][]byte {
	out := make([][]byte, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.GetUnstructuredBytes())
	}
	return out
}
