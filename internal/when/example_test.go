package when_test

import (
	"fmt"
	"time"

	"github.com/ragmem/ragmem/internal/when"
)

// A question asked on Wednesday 16 August 2023 names two times; a memory
// that happened within one of them matches it.
func ExampleFind() {
	asked := time.Date(2023, time.August, 16, 15, 4, 0, 0, time.UTC)
	for _, r := range when.Find("What did Maria do last week, and on 3 July?", asked) {
		fmt.Printf("%q: %s [%s, %s)\n", r.Text, r.Unit, r.From.Format(time.DateOnly), r.To.Format(time.DateOnly))
	}
	said := time.Date(2023, time.August, 9, 18, 0, 0, 0, time.UTC)
	fmt.Println(when.Find("last week", asked)[0].Contains(said))
	// Output:
	// "last week": week [2023-08-07, 2023-08-14)
	// "3 July": day [2023-07-03, 2023-07-04)
	// true
}
