"""Cluster texts shared by the spot tests (imported by file name, not as a package)."""

# Four T4 per server, on-demand and spot; format with rate=<revocations per server-hour>.
PACKED_CLUSTER_TOML = """
version = 1
gpus_per_host = 4
[checkpoint]
write_s = 20
restart_s = 30
[gpu.t4]
on_demand = 16
spot = 16
on_demand_price_per_hour = 0.526
spot_price_per_hour = 0.158
revocation_rate_per_hour = {rate}
replacement_delay_s = 120
"""
