"""Encoders and improvement backbones (GraphGPS-style encoder, DACT, N2S, NDS).

Filled in by the model work.
"""

__all__: list[str] = []
