"""The network clients: live GPU prices over HTTP (live_prices) and model configs from the Hugging Face Hub (hf_hub)."""
