"""The OpenAPI document: what Litestar's generation leaves out, schema generators, the docs UI."""
