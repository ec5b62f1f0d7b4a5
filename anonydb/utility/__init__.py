"""What a release keeps: utility measures (discernibility, NCP, KL divergence) and the
aggregate-query workload with its errors (Li's thesis Sec. 2.6, 5.5)."""
