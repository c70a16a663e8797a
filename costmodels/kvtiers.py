"""Catalogue of KV-cache memory tiers beside HBM: host memory and local flash per platform, with sources.

Every number is per chip (GPU) unless the name says per domain; prices are the
marginal cost of holding a byte for an hour. Markers: [V] vendor or official,
[V*] vendor spec relayed by a secondary source, [EST] estimate with the
arithmetic shown. Sources (the survey of ``kv_tiers.md`` copied here):

* DGX H100/H200 and DGX B200: 2 TB DDR5 per 8-GPU node [V]
  (docs.nvidia.com/dgx-basepod/…/core-components.html;
  docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-dgxb200.html) → 250 GB
  per GPU; 8× 3.84 TB U.2 NVMe data cache = 30.72 TB per node [V] → 3.84 TB per GPU.
* Host↔GPU on HGX: PCIe Gen5 x16 per GPU [V] (PCI-SIG: 32 GT/s × 16 lanes, 128b/130b
  → 63 GB/s per direction).
* GB200: Grace 480 GB LPDDR5X per 2 GPUs [V*] (yobitel.com/knowledge-base/nvidia-gb200)
  → 240 GB per GPU; NVLink-C2C 900 GB/s bidirectional per Grace [V*] → 450 GB/s
  per direction shared by 2 GPUs = 225 GB/s per GPU [EST].
* Vera Rubin: 1.5 TB LPDDR5X per Vera [EST from 75 TB fast memory − 20.7 TB HBM4
  over 36 Vera] → 750 GB per GPU; C2C 1.8 TB/s bidirectional [V*] → 900 GB/s per
  direction over 2 GPUs = 450 GB/s per GPU [EST].
* GB200/GB300/Rubin trays: 4 E1.S data SSDs per 4-GPU tray [V]
  (docs.nvidia.com/dgx/dgxgb200-user-guide/storage.html); capacity not published:
  7.68 TB per drive assumed [EST] → 7.68 TB per GPU.
* NVMe read bandwidth: not published for the DGX arrays; ~7 GB/s per PCIe Gen4
  U.2 drive and one drive per GPU [EST] → 7 GB/s per GPU (HGX); Gen5/Gen6 E1.S
  ~14 GB/s per drive [EST] → 14 GB/s per GPU (GB200, Rubin).
* Write (offload) bandwidth per chip: host memory over PCIe or NVLink-C2C, both
  full duplex, so the per-direction figure above [V]/[EST]. Flash writes slower
  than it reads: the DGX data drive class (Samsung PM1733 U.2, 3.84 TB) is rated
  6.4 GB/s read, 3.8 GB/s write [V*] (hardwareluxx.de, news 50889, relaying
  Samsung's launch table) → 3.8 GB/s per GPU (HGX, one drive per GPU); Gen5/Gen6
  E1.S at the same write/read ratio: 14 × 3.8/6.4 = 8.3 GB/s per GPU [EST].
  A remote store without a stated write bandwidth writes at its read bandwidth
  (a NIC is full duplex).
* Prices: DRAM marginal 0.00334 $/GB-h [EST: AWS r7i.48xlarge − c7i.48xlarge =
  $4.1328/h per 1,152 GiB]; local SSD 0.00011 $/GB-h [EST: GCP local SSD
  ~$0.08/GB-month / 730 h]. HBM has no price of its own: it is paid by the
  chips, and KV parked in it takes memory replicas could batch with.
* Latency before the first byte: PCIe/C2C DMA 5 µs [EST]; NVMe read ~100 µs [EST].

A ``remote`` tier (a pooled KV store reached over the scale-out network,
Mooncake-style) has no default: an instance states its capacity, bandwidth
and price.

Examples
--------
>>> t = default_tier("b200", "host")
>>> t["capacity_gb_per_chip"], t["bandwidth_gb_per_s"], t["write_gb_per_s"]
(250.0, 63.0, 63.0)
>>> default_tier("b200", "flash")["write_gb_per_s"]
3.8
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULTS", "PRICES_USD_PER_GB_HOUR", "default_tier"]

#: $/GB-h by tier (module docstring).
PRICES_USD_PER_GB_HOUR = {"host": 0.00334, "flash": 0.00011}

_HGX_HOST = {"capacity_gb_per_chip": 250.0, "bandwidth_gb_per_s": 63.0, "write_gb_per_s": 63.0, "latency_us": 5.0}
_HGX_FLASH = {"capacity_gb_per_chip": 3840.0, "bandwidth_gb_per_s": 7.0, "write_gb_per_s": 3.8, "latency_us": 100.0}
_TRAY_FLASH = {"capacity_gb_per_chip": 7680.0, "bandwidth_gb_per_s": 14.0, "write_gb_per_s": 8.3, "latency_us": 100.0}

#: chip -> tier -> defaults (capacity per chip, GB; read and write bandwidth per chip per direction, GB/s;
#: latency, µs).
DEFAULTS: dict[str, dict[str, dict[str, float]]] = {
    "h100": {"host": _HGX_HOST, "flash": _HGX_FLASH},
    "h200": {"host": _HGX_HOST, "flash": _HGX_FLASH},
    "b200": {"host": _HGX_HOST, "flash": _HGX_FLASH},
    "gb200": {"host": {"capacity_gb_per_chip": 240.0, "bandwidth_gb_per_s": 225.0, "write_gb_per_s": 225.0,
                       "latency_us": 5.0},
              "flash": _TRAY_FLASH},
    "rubin": {"host": {"capacity_gb_per_chip": 750.0, "bandwidth_gb_per_s": 450.0, "write_gb_per_s": 450.0,
                       "latency_us": 5.0},
              "flash": _TRAY_FLASH},
}


def default_tier(chip: str, tier: str) -> dict[str, Any]:
    """The catalogue's defaults of ``tier`` on ``chip`` with its price ({} where none is known)."""
    out = dict(DEFAULTS.get(chip, {}).get(tier, {}))
    if tier in PRICES_USD_PER_GB_HOUR:
        out["usd_per_gb_hour"] = PRICES_USD_PER_GB_HOUR[tier]
    return out
