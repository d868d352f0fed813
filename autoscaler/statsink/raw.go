package statsink

// rawMessage receives a StreamMetricsMessage as wire bytes. It is a
// protobuf message of the legacy (APIv1) kind with an Unmarshal method:
// gRPC's proto codec hands it the received bytes as they are, so neither
// gRPC nor the protobuf runtime builds Go structs for the tens of thousands
// of metric families in an Envoy flush; the sink decodes them itself
// (decode.go). The buffer is reused for the next message of the stream.
type rawMessage struct {
	b []byte
}

// Reset empties the message (protoadapt.MessageV1).
func (m *rawMessage) Reset() { m.b = m.b[:0] }

// String describes the message (protoadapt.MessageV1).
func (m *rawMessage) String() string { return "statsink.rawMessage" }

// ProtoMessage marks the type as a protobuf message (protoadapt.MessageV1).
func (*rawMessage) ProtoMessage() {}

// Unmarshal keeps a copy of b: the caller (gRPC's codec) reuses b.
func (m *rawMessage) Unmarshal(b []byte) error {
	m.b = append(m.b[:0], b...)
	return nil
}
