"""Everything that turns one bid request into one reply: litellm and its bounded HTTP layer, the
offline sims, routing and deployments, retries, rate limits, keys bound to endpoints and the
respond-tool modes. The engine calls it; it never imports the engine."""
