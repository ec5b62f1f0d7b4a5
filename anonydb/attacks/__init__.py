"""What an adversary can learn from a release: the foreground-knowledge attack (similarity
attacks, Li's thesis ch. 3), background knowledge mined as rules and as kernel priors (ch. 4;
Li & Li's Injector), the posterior beliefs and the audit of a release against them, and the
membership attack on sliced releases (Li et al., slicing Sec. 5)."""
