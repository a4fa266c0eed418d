"""Every catalog endpoint answers on both databases with the reference data."""

from __future__ import annotations


def test_options_list_the_three_builtins(client):
    r = client.get("/v1/options")
    assert r.status_code == 200
    keys = {o["key"] for o in r.json()["items"]}
    assert keys == {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
