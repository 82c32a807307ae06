package handler

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/service/account"
)

// codeSent is the answer of POST /user/code: data is the code in
// development only; sentTo names where it went, the phone masked.
type codeSent struct {
	Envelope
	SentTo string `json:"sentTo"`
}

// sendCode reads the phone from the query only; the client address is the
// peer's, or what a trusted proxy says (TrustedProxies).
func (a userAPI) sendCode(c *gin.Context) {
	phone := c.Query("phone")
	code, err := a.Users.SendCode(c.Request.Context(), phone, c.ClientIP())
	if err != nil {
		a.fail(c, err)
		return
	}
	env := codeSent{Envelope: Envelope{Success: true}, SentTo: account.MaskPhone(phone)}
	if a.Development {
		env.Data = code
	}
	c.JSON(http.StatusOK, env)
}
