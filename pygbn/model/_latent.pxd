# How the layer-one latent count of an observed cell is drawn given the
# observation (the one definition of these codes: pygbn.model.links exports
# them to Python, pygbn.inference._blocked cimports them).
cpdef enum LatentMode:
    LATENT_COUNTS = 0         # Poisson link: the observation is the latent count      (eq:PFA)
    LATENT_CRT = 1            # upper layers: CRT(m, sum_k phi_vk theta_kj)            (eq:CRT)
    LATENT_TRUNC_POISSON = 2  # Bernoulli-Poisson link, b = 1: Pois_+(sum_k ...)       (eq:Ber-PGBN)
    LATENT_TRUNC_BESSEL = 3   # PRG link, y > 0: Bessel_-1(2 sqrt(a_j y sum_k ...))    (eq:Gam-PGBN)
