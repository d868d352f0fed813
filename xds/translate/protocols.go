package translate

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// WebSocketUpgrade is the upgrade type both connection managers allow.
const WebSocketUpgrade = "websocket"

// setProtocols turns on, on a connection manager, everything a client or
// the revision cluster may speak to it: HTTP/1.0 (accept_http_10), HTTP/1.1
// upgrades to WebSocket, HTTP/2 with prior knowledge (codec AUTO) and
// extended CONNECT (RFC 8441, WebSocket over HTTP/2). Envoy translates
// between a client's protocol and the backend's (see
// RevisionClusterParams.Protocol).
func setProtocols(hcm *hcmv3.HttpConnectionManager) {
	hcm.CodecType = hcmv3.HttpConnectionManager_AUTO
	hcm.HttpProtocolOptions = &corev3.Http1ProtocolOptions{AcceptHttp_10: true}
	hcm.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{AllowConnect: true}
	hcm.UpgradeConfigs = []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: WebSocketUpgrade}}
}

// accessLogFields are the JSON access log's keys and Envoy format
// operators: enough to explain any refusal (response_flags and
// response_code_details name Envoy's reason) without debug logging.
var accessLogFields = map[string]any{
	"start_time":            "%START_TIME%",
	"method":                "%REQ(:METHOD)%",
	"path":                  "%REQ(:PATH)%",
	"authority":             "%REQ(:AUTHORITY)%",
	"protocol":              "%PROTOCOL%",
	"upgrade":               "%REQ(UPGRADE)%",
	"revision":              "%REQ(X-THAW-REVISION)%",
	"response_code":         "%RESPONSE_CODE%",
	"response_flags":        "%RESPONSE_FLAGS%",
	"response_code_details": "%RESPONSE_CODE_DETAILS%",
	"grpc_status":           "%GRPC_STATUS%",
	"upstream_host":         "%UPSTREAM_HOST%",
	"upstream_cluster":      "%UPSTREAM_CLUSTER%",
	"duration_ms":           "%DURATION%",
	"bytes_received":        "%BYTES_RECEIVED%",
	"bytes_sent":            "%BYTES_SENT%",
	"downstream_remote":     "%DOWNSTREAM_REMOTE_ADDRESS%",
	// cold_start_ms: how long the activator held the request (revisions
	// whose wake policy sets coldStartHeader), from its response header.
	"cold_start_ms": "%RESP(X-THAW-COLD-START)%",
}

// AccessLog returns listener thaw_http's access log: one JSON object per
// request written to path (a file, or /dev/stdout), or nil when path is
// empty (off).
func AccessLog(path string) ([]*accesslogv3.AccessLog, error) {
	if path == "" {
		return nil, nil
	}
	fields, err := structpb.NewStruct(accessLogFields)
	if err != nil {
		return nil, err
	}
	a, err := toAny(&filev3.FileAccessLog{
		Path: path,
		AccessLogFormat: &filev3.FileAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
			Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: fields},
		}},
	})
	if err != nil {
		return nil, err
	}
	return []*accesslogv3.AccessLog{{
		Name:       "envoy.access_loggers.file",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: a},
	}}, nil
}
