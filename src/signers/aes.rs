//! The AES round function (FIPS-197), as the x86 instruction `AESENC` computes it, in plain
//! integer code: the scalar reference of the hash-stream expansion of
//! [`HashedGaussian`](super::HashedGaussian), bit-identical to the AES-NI instruction on every
//! platform (checked against the hardware and the published test vector).
//!
//! A state or round key is 16 bytes in the x86 register order: byte `4c + r` holds row `r`,
//! column `c`.

/// The AES S-box, computed at compile time: the inverse in GF(2^8) (modulus
/// `x^8 + x^4 + x^3 + x + 1`, with 0 ↦ 0) followed by the affine map of FIPS-197 §5.1.1.
const SBOX: [u8; 256] = {
    let mut s = [0u8; 256];
    let mut x = 0usize;
    while x < 256 {
        // The inverse by search (256 × 256 products, at compile time).
        let mut inv = 0u8;
        let mut y = 1usize;
        while y < 256 && x != 0 {
            if gmul(x as u8, y as u8) == 1 {
                inv = y as u8;
                break;
            }
            y += 1;
        }
        let b = inv;
        s[x] = b ^ b.rotate_left(1) ^ b.rotate_left(2) ^ b.rotate_left(3) ^ b.rotate_left(4) ^ 0x63;
        x += 1;
    }
    s
};

/// Product in GF(2^8) modulo `x^8 + x^4 + x^3 + x + 1`.
const fn gmul(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0u8;
    while b != 0 {
        if b & 1 == 1 {
            p ^= a;
        }
        a = xtime(a);
        b >>= 1;
    }
    p
}

/// Multiplication by `x` (that is, 2) in GF(2^8).
#[inline(always)]
const fn xtime(a: u8) -> u8 {
    (a << 1) ^ (((a >> 7) & 1) * 0x1b)
}

/// One AES encryption round, `AESENC(state, key)`: ShiftRows, SubBytes, MixColumns, then
/// the round key added (XOR).
pub fn aesenc(state: [u8; 16], key: [u8; 16]) -> [u8; 16] {
    let mut t = [0u8; 16];
    for c in 0..4 {
        for r in 0..4 {
            // ShiftRows: row r moves left by r columns; then SubBytes.
            t[4 * c + r] = SBOX[state[4 * ((c + r) % 4) + r] as usize];
        }
    }
    let mut out = [0u8; 16];
    for c in 0..4 {
        let [a0, a1, a2, a3] = [t[4 * c], t[4 * c + 1], t[4 * c + 2], t[4 * c + 3]];
        let all = a0 ^ a1 ^ a2 ^ a3;
        // MixColumns: b_r = 2·a_r ⊕ 3·a_{r+1} ⊕ a_{r+2} ⊕ a_{r+3} = a_r ⊕ all ⊕ 2·(a_r ⊕ a_{r+1}).
        out[4 * c] = a0 ^ all ^ xtime(a0 ^ a1);
        out[4 * c + 1] = a1 ^ all ^ xtime(a1 ^ a2);
        out[4 * c + 2] = a2 ^ all ^ xtime(a2 ^ a3);
        out[4 * c + 3] = a3 ^ all ^ xtime(a3 ^ a0);
    }
    for (o, k) in out.iter_mut().zip(key) {
        *o ^= k;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 128-bit value written most significant byte first (as in the published vectors),
    /// as the 16 register bytes (least significant first).
    fn bytes(hex: u128) -> [u8; 16] {
        hex.to_le_bytes()
    }

    #[test]
    fn sbox_matches_fips_197() {
        // FIPS-197 Figure 7: S(00) = 63, S(01) = 7c, S(53) = ed, S(ff) = 16.
        assert_eq!(
            [SBOX[0x00], SBOX[0x01], SBOX[0x53], SBOX[0xff]],
            [0x63, 0x7c, 0xed, 0x16]
        );
        let mut seen = [false; 256];
        SBOX.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().all(|&s| s), "the S-box is a permutation");
    }

    #[test]
    fn round_matches_the_published_aesenc_vector() {
        // Intel's AES-NI white paper (Gueron), AESENC example.
        let out = aesenc(
            bytes(0x7b5b_5465_7374_5665_6374_6f72_5d53_475d),
            bytes(0x4869_2853_6861_7929_5b47_7565_726f_6e5d),
        );
        assert_eq!(out, bytes(0xa831_1c2f_9fdb_a3c5_8b10_4b58_ded7_e595));
    }

    #[test]
    fn round_equals_the_hardware_instruction() {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::detected().aes {
            use std::arch::x86_64::*;
            let mut rng = crate::rng::Rng::new(4);
            for _ in 0..1000 {
                let s: u128 = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
                let k: u128 = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
                // SAFETY: AES-NI was detected above; the loads and stores are of 16-byte
                // arrays (unaligned access).
                let hw = unsafe {
                    let x = _mm_aesenc_si128(
                        _mm_loadu_si128(s.to_le_bytes().as_ptr().cast()),
                        _mm_loadu_si128(k.to_le_bytes().as_ptr().cast()),
                    );
                    let mut out = [0u8; 16];
                    _mm_storeu_si128(out.as_mut_ptr().cast(), x);
                    out
                };
                assert_eq!(aesenc(s.to_le_bytes(), k.to_le_bytes()), hw);
            }
        }
    }
}
