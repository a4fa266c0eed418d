// Starts Swagger UI on /docs from a file of the service, not an inline script: the page's
// Content-Security-Policy allows scripts of this origin only (docs/operations.md, "Security headers").
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/docs/openapi.json",
    dom_id: "#swagger-container",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
  });
});
