package message

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// The encoding/json path the hand-written encoder replaced,
// kept here as the reference the tests compare the encoder with: every
// level through json.Marshal, addresses as their addressDict.

// referenceMarshal is Marshal as it was.
func referenceMarshal(v any) ([]byte, error) {
	name, ok := nameOf(reflect.TypeOf(v))
	if !ok {
		return nil, ErrUnknownType
	}
	body, err := referenceEncode(addressable(v))
	if err != nil {
		return nil, err
	}
	return referenceTag(name, body)
}

// refAddress encodes as the addressDict, as Address.MarshalJSON did.
type refAddress struct{ a *Address }

func (r refAddress) MarshalJSON() ([]byte, error) { return json.Marshal(r.a.serialize()) }

func refAddr(a *Address) *refAddress {
	if a == nil {
		return nil
	}
	return &refAddress{a}
}

// refBase is Base with the reference address encoding.
type refBase struct {
	ID          any         `json:"id"`
	ParentID    any         `json:"parent_id"`
	TeamID      any         `json:"team_id"`
	Timestamp   any         `json:"timestamp"`
	Sender      *refAddress `json:"sender"`
	Recipient   *refAddress `json:"recipient"`
	DisplayType DisplayType `json:"display_type,omitempty"`
}

func refEnvelope(b *Base) refBase {
	return refBase{b.ID, b.ParentID, b.TeamID, b.Timestamp, refAddr(b.Sender), refAddr(b.Recipient), b.DisplayType}
}

func referenceEncode(v any) ([]byte, error) {
	type content struct {
		refBase
		Content string `json:"content"`
	}
	type messageID struct {
		refBase
		MessageID any `json:"message_id"`
	}
	type notice struct {
		refBase
		ContentType    string          `json:"content_type"`
		Content        string          `json:"content"`
		CurrentMessage json.RawMessage `json:"current_message"`
	}
	refNotice := func(n *NotificationMessage) (notice, error) {
		raw, err := referenceValue(n.CurrentMessage)
		return notice{refEnvelope(&n.Base), n.ContentType, n.Content, raw}, err
	}
	switch m := v.(type) {
	case *UserMessage:
		return json.Marshal(content{refEnvelope(&m.Base), m.Content})
	case *ResultMessage:
		return json.Marshal(content{refEnvelope(&m.Base), m.Content})
	case *CancelMessage:
		return json.Marshal(struct {
			refBase
			Reason string `json:"reason"`
		}{refEnvelope(&m.Base), m.Reason})
	case *StopMessage:
		return json.Marshal(refEnvelope(&m.Base))
	case *ReceivedMessage:
		return json.Marshal(messageID{refEnvelope(&m.Base), m.MessageID})
	case *ProcessedMessage:
		return json.Marshal(messageID{refEnvelope(&m.Base), m.MessageID})
	case *HandledMessage:
		return json.Marshal(messageID{refEnvelope(&m.Base), m.MessageID})
	case *StartMessage:
		raw, err := referenceValue(m.Config)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			refBase
			Parent *refAddress     `json:"parent"`
			Config json.RawMessage `json:"config"`
		}{refEnvelope(&m.Base), refAddr(m.Parent), raw})
	case *SentMessage:
		raw, err := referenceValue(m.Message)
		if err != nil {
			return nil, err
		}
		e := refEnvelope(&m.Base)
		return json.Marshal(struct {
			ID          any             `json:"id"`
			ParentID    any             `json:"parent_id"`
			TeamID      any             `json:"team_id"`
			Timestamp   any             `json:"timestamp"`
			Sender      *refAddress     `json:"sender"`
			DisplayType DisplayType     `json:"display_type,omitempty"`
			Recipient   *refAddress     `json:"recipient"`
			Message     json.RawMessage `json:"message"`
		}{e.ID, e.ParentID, e.TeamID, e.Timestamp, e.Sender, e.DisplayType, refAddr(m.Recipient), raw})
	case *NotificationMessage:
		n, err := refNotice(m)
		if err != nil {
			return nil, err
		}
		return json.Marshal(n)
	case *WarningMessage:
		n, err := refNotice(&m.NotificationMessage)
		if err != nil {
			return nil, err
		}
		return json.Marshal(n)
	case *ErrorMessage:
		n, err := refNotice(&m.NotificationMessage)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			notice
			Traceback string `json:"traceback"`
		}{n, m.Traceback})
	case *StateChangedMessage:
		raw, err := referenceValue(m.State)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			refBase
			State json.RawMessage `json:"state"`
		}{refEnvelope(&m.Base), raw})
	case *EventMessage:
		raw, err := referenceValue(m.Event)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			refBase
			Event json.RawMessage `json:"event"`
		}{refEnvelope(&m.Base), raw})
	}
	return json.Marshal(v)
}

func referenceValue(v any) (json.RawMessage, error) {
	if v == nil || isNil(v) {
		return json.RawMessage("null"), nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	if _, ok := nameOf(reflect.TypeOf(v)); ok {
		return referenceMarshal(v)
	}
	return json.Marshal(v)
}

func referenceTag(name string, body []byte) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return nil, errNotObject(name)
	}
	qn, _ := json.Marshal(name)
	out := append([]byte(`{"`+typeTag+`":`), qn...)
	if len(bytes.TrimSpace(body[1:len(body)-1])) > 0 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}
