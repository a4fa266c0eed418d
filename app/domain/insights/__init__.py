"""The insights feature: break-even points, cost curves, sensitivity and uncertainty for a profile, as JSON
or SVG charts."""
