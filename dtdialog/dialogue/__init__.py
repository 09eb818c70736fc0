"""The dialogue policies, each a small unit the manager consults: clarify, abstain, reject and hand off.

Each unit decides and returns its decision; ``dtdialog.manager.DialogueManager`` applies it to the session.
"""
