"""Devices, placement, rendezvous, the executor and DirectSession."""
