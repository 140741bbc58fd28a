//go:build !purego

#include "textflag.h"

// func specialAVX2(b []byte) int
//
// The index of the first byte of b that is '"', '\\', below 0x20 or at or
// above 0x80, or len(b): 32 bytes a compare. One signed compare, 0x20 > x,
// holds for both 0x00-0x1f and 0x80-0xff (negative as signed bytes).
TEXT ·specialAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), BX
	XORQ AX, AX
	CMPQ BX, $32
	JB   small

	MOVQ         $0x2222222222222222, DX
	MOVQ         DX, X1
	VPBROADCASTQ X1, Y1
	MOVQ         $0x5c5c5c5c5c5c5c5c, DX
	MOVQ         DX, X2
	VPBROADCASTQ X2, Y2
	MOVQ         $0x2020202020202020, DX
	MOVQ         DX, X3
	VPBROADCASTQ X3, Y3

loop:
	LEAQ      32(AX), CX
	CMPQ      CX, BX
	JA        last
	VMOVDQU   (SI)(AX*1), Y0
	VPCMPEQB  Y0, Y1, Y4
	VPCMPEQB  Y0, Y2, Y5
	VPCMPGTB  Y0, Y3, Y6
	VPOR      Y4, Y5, Y4
	VPOR      Y4, Y6, Y4
	VPMOVMSKB Y4, DX
	TESTL     DX, DX
	JNZ       found
	MOVQ      CX, AX
	JMP       loop

last:
	// Fewer than 32 bytes left, at least 32 in all: check the last 32,
	// and drop the flags of those before AX, already checked.
	CMPQ      AX, BX
	JAE       none
	MOVQ      BX, R8
	SUBQ      $32, R8
	VMOVDQU   (SI)(R8*1), Y0
	VPCMPEQB  Y0, Y1, Y4
	VPCMPEQB  Y0, Y2, Y5
	VPCMPGTB  Y0, Y3, Y6
	VPOR      Y4, Y5, Y4
	VPOR      Y4, Y6, Y4
	VPMOVMSKB Y4, DX
	MOVQ      AX, CX
	SUBQ      R8, CX
	SHRL      CX, DX
	TESTL     DX, DX
	JZ        none

found:
	BSFL       DX, DX
	ADDQ       DX, AX
	VZEROUPPER
	MOVQ       AX, ret+24(FP)
	RET

none:
	VZEROUPPER
	MOVQ BX, ret+24(FP)
	RET

small:
	CMPQ    AX, BX
	JAE     done
	MOVBLZX (SI)(AX*1), DX
	CMPB    DL, $0x22
	JEQ     done
	CMPB    DL, $0x5c
	JEQ     done
	CMPB    DL, $0x20
	JB      done
	CMPB    DL, $0x80
	JAE     done
	INCQ    AX
	JMP     small

done:
	MOVQ AX, ret+24(FP)
	RET
