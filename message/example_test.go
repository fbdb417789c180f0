package message_test

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/akgentic/akgentic-go/message"
)

// GreetMessage is an application message: a struct that embeds
// message.Base.
type GreetMessage struct {
	message.Base
	Text string `json:"text"`
}

// Register a message type once (usually in init), under a name that never
// changes; Marshal writes that name as "__model__" and Unmarshal uses it to
// build the right Go type back.
func ExampleRegister() {
	message.Register[GreetMessage]("GreetMessage")

	m := &GreetMessage{Text: "Hello, Akgentic!"}
	m.ID = uuid.MustParse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
	m.Timestamp = time.Date(2025, time.March, 14, 15, 9, 26, 0, time.UTC)

	data, err := message.Marshal(m)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(data))

	v, err := message.Unmarshal(data)
	if err != nil {
		panic(err)
	}
	g := v.(*GreetMessage)
	fmt.Println(message.TypeName(g), g.ID, g.Text)
	// Output:
	// {"__model__":"GreetMessage","id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa","parent_id":null,"team_id":null,"timestamp":"2025-03-14T15:09:26Z","sender":null,"recipient":null,"text":"Hello, Akgentic!"}
	// GreetMessage aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa Hello, Akgentic!
}

// Unmarshal reports what was wrong with a payload it cannot decode.
func ExampleUnmarshal_errors() {
	for _, in := range []string{
		`{"content":"hi"}`,
		`{"__model__":"Shout","content":"hi"}`,
		`{"__model__":"UserMessage","content":42}`,
	} {
		_, err := message.Unmarshal([]byte(in))
		fmt.Println(err)
	}
	// Output:
	// message: decode: missing "__model__" type tag
	// message: decode: message: "Shout": type not registered
	// message: decode UserMessage: field "content": cannot decode a JSON number as string
}
