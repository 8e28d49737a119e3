"""The store's internals: the checked boundary, the contract's rules, the async
and embedding faces, the per-user API, retention and the item writes both backends share.

Private: import the public names from :mod:`mnemon_langgraph.store`.
"""
