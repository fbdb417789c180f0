package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/akgentic/akgentic-go/actor"
	"github.com/akgentic/akgentic-go/agent"
	"github.com/akgentic/akgentic-go/orchestrator"
	"github.com/akgentic/akgentic-go/studio"
)

// Mount the studio of a team under /studio/ of a program's own server;
// the input box speaks as the team's person, @Human.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys := actor.NewSystem(actor.SystemConfig{})
	defer sys.Shutdown(ctx)
	team, _ := orchestrator.New(sys)
	human, _ := team.Spawn(ctx, &agent.HumanProxy{}, &actor.Config{Name: "@Human", Role: "Human"})

	st, err := studio.New(ctx, team, studio.Options{Person: human})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/studio/", http.StripPrefix("/studio", st))
	srv := httptest.NewServer(mux) // or st.Serve(ctx, listener)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/studio/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	// Output:
	// 200 OK text/html; charset=utf-8
}
