package translate

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// validator is implemented by every generated Envoy proto.
type validator interface {
	proto.Message
	ValidateAll() error
}

// toAny validates m and packs it. Envoy would NACK an invalid message; we
// fail at translation time instead, naming the message type.
func toAny(m validator) (*anypb.Any, error) {
	if err := m.ValidateAll(); err != nil {
		return nil, fmt.Errorf("validate %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return a, nil
}

// validated returns m or its validation error.
func validated[M validator](m M) (M, error) {
	if err := m.ValidateAll(); err != nil {
		var zero M
		return zero, fmt.Errorf("validate %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return m, nil
}
