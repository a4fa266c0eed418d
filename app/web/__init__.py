"""The web layer every feature uses: authentication, rate limits, content negotiation, caching, problem details,
metrics, tracing, logs and the other pieces between a request and its handler."""
