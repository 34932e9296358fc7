"""What an answer is made of beyond its hits (G26-G28, H20, M3-M9): the result and its
explanation, guidance (Preferences & lessons), the fact sheet, the person card and the owner
profile.
"""
