package wake

import (
	"strconv"
	"strings"
	"time"
)

// defaultPage is the waiting page: it reloads itself every {{refresh}}
// seconds; once the revision is awake the reload reaches the application.
const defaultPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{refresh}}">
<meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Starting…</title>
<style>body{font-family:system-ui,sans-serif;display:flex;align-items:center;justify-content:center;height:90vh;color:#333}</style>
</head>
<body>
<main>
<h1>Starting…</h1>
<p>This service was asleep and is starting. This page reloads every {{refresh}} seconds.</p>
</main>
</body>
</html>
`

// renderPage returns body (or the default page when empty) with
// {{refresh}} replaced by the period in whole seconds (at least 1).
func renderPage(body string, refresh time.Duration) string {
	if body == "" {
		body = defaultPage
	}
	secs := max(1, int(refresh/time.Second))
	return strings.ReplaceAll(body, "{{refresh}}", strconv.Itoa(secs))
}
