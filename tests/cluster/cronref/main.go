package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

func main() {
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		text, at, _ := strings.Cut(lines.Text(), "\t")
		after, err := time.Parse(time.RFC3339, at)
		if err != nil {
			panic(err)
		}
		schedule, err := cron.ParseStandard(text)
		if err != nil {
			fmt.Println("refused")
			continue
		}
		next := schedule.Next(after.UTC())
		if next.IsZero() {
			fmt.Println("never")
		} else {
			fmt.Println(next.UTC().Format(time.RFC3339))
		}
	}
}
