"""How far the judge and the scorers can be trusted: the judge audit and its report, reference-pool against
group-relative judging, and the reward hacks measured.
"""
