package statsink

import "google.golang.org/grpc/mem"

// rawMessage receives a StreamMetricsMessage as wire bytes, which the sink
// decodes itself (decode*.go) instead of building Go structs for the tens of
// thousands of metric families in an Envoy flush.
//
// Through the sink's codec (codec.go, set by ServerOptions) it keeps a
// reference to gRPC's received buffers, the message's HTTP/2 frames, and
// the sink reads them in place (msgReader): no copy of the message. Through
// gRPC's own proto codec (a server without ServerOptions) it is a protobuf
// message of the legacy (APIv1) kind whose Unmarshal method keeps a copy.
type rawMessage struct {
	b     []byte          // the copy made by Unmarshal
	data  mem.BufferSlice // referenced buffers from the codec; freed by release
	parts [][]byte
}

// bytes returns the message as consecutive parts, valid until release or
// the next receive.
func (m *rawMessage) bytes() [][]byte {
	m.parts = m.parts[:0]
	if m.data == nil {
		return append(m.parts, m.b)
	}
	for _, b := range m.data {
		m.parts = append(m.parts, b.ReadOnlyData())
	}
	return m.parts
}

// hold takes a reference to data (gRPC frees it after the codec returns).
func (m *rawMessage) hold(data mem.BufferSlice) {
	m.release()
	data.Ref()
	m.data = data
	m.b = m.b[:0]
}

// release returns the held buffers to gRPC's pool.
func (m *rawMessage) release() {
	if m.data != nil {
		m.data.Free()
		m.data = nil
	}
	clear(m.parts)
}

// Reset empties the message (protoadapt.MessageV1).
func (m *rawMessage) Reset() {
	m.release()
	m.b = m.b[:0]
}

// String describes the message (protoadapt.MessageV1).
func (m *rawMessage) String() string { return "statsink.rawMessage" }

// ProtoMessage marks the type as a protobuf message (protoadapt.MessageV1).
func (*rawMessage) ProtoMessage() {}

// Unmarshal keeps a copy of b: the caller (gRPC's proto codec) reuses b.
func (m *rawMessage) Unmarshal(b []byte) error {
	m.release()
	m.b = append(m.b[:0], b...)
	return nil
}
